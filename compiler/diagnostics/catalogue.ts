import type { Diagnostic, RelatedLocation, Severity, SourceLocation } from "./diagnostic.js";

/**
 * The one catalogue of diagnostic codes. The thousands digit names the stage:
 * 0 internal and usage, 1 discover, 2 parse, 3 validate, 4 link, 5 graph, 6 plan, 7 diff, 8 preflight,
 * 9 write.
 * A code is never reused for another meaning; a retired code stays listed as retired.
 */
interface Entry<A> {
  code: string;
  severity: Severity;
  message: (args: A) => string;
}

function entry<A = Record<string, never>>(code: string, severity: Severity, message: (args: A) => string): Entry<A> {
  return { code, severity, message };
}

const q = (s: string): string => JSON.stringify(s);

export const Diagnostics = {
  // Retired codes, never reused: CA4002 (dag_id case collision; ids are lower case by schema).

  // 0: internal and usage
  InternalError: entry<{ detail: string }>("CA0001", "error", (a) => `internal error: ${a.detail}`),

  // 1: discover
  FileUnreadable: entry<{ reason: string }>("CA1001", "error", (a) => `cannot read the file: ${a.reason}`),
  FileTooLarge: entry<{ size: number; limit: number }>(
    "CA1002",
    "error",
    (a) => `the file has ${a.size} bytes, over the limit of ${a.limit} bytes`,
  ),
  NoContracts: entry<{ pattern: string }>("CA1003", "error", (a) => `no contract files match ${q(a.pattern)}`),
  SymlinkLoop: entry<{ path: string }>("CA1004", "error", (a) => `symbolic link loop or link leaving the project at ${q(a.path)}`),
  NotUtf8: entry<{ line: number }>("CA1005", "error", (a) => `the file is not valid UTF-8 (first bad byte on line ${a.line})`),
  NoOrchestrationConfig: entry<{ folder: string }>(
    "CA1006",
    "warning",
    (a) => `no orchestration config in ${q(a.folder)}; built-in defaults are used`,
  ),
  ReferencedFileMissing: entry<{ path: string }>("CA1007", "error", (a) => `the file ${q(a.path)} does not exist in the project`),
  PreviousManifestDamaged: entry<{ path: string; problem: string }>(
    "CA1101",
    "error",
    (a) => `the previous manifest ${q(a.path)} is damaged, so no change can be checked against it: ${a.problem}`,
  ),
  CacheEntryIgnored: entry<{ problem: "damaged" | "foreign" | "unreadable"; detail: string; others: number }>(
    "CA1950",
    "info",
    (a) =>
      `the incremental cache's entry of this file is ${a.problem} (${a.detail}), so it was ignored and the file parsed again` +
      (a.others > 0 ? `; so were the ${a.problem} entries of ${a.others} other file(s)` : ""),
  ),
  ModuleIndexIgnored: entry<{ problem: "damaged" | "foreign" | "unreadable"; detail: string }>(
    "CA1951",
    "info",
    (a) => `the incremental cache's index of rendered DAG modules is ${a.problem} (${a.detail}), so it was ignored and every DAG module rendered again`,
  ),
  RecordIndexIgnored: entry<{ problem: "damaged" | "foreign" | "unreadable"; detail: string }>(
    "CA1952",
    "info",
    (a) => `the incremental cache's index of the manifest's records is ${a.problem} (${a.detail}), so it was ignored and every record of the manifest written out again`,
  ),
  CompileStateIgnored: entry<{ problem: string; detail: string }>(
    "CA1953",
    "info",
    (a) => `the incremental cache's compile state is ${a.problem} (${a.detail}), so it was ignored and the whole project compiled`,
  ),

  // 2: parse
  YamlSyntax: entry<{ detail: string }>("CA2001", "error", (a) => `YAML syntax error: ${a.detail}`),
  DuplicateKey: entry<{ key: string }>("CA2002", "error", (a) => `the key ${q(a.key)} appears twice in the same mapping`),
  MultipleDocuments: entry<{ count: number }>(
    "CA2003",
    "error",
    (a) => `the file holds ${a.count} YAML documents; a contract file holds exactly one`,
  ),
  EmptyDocument: entry("CA2004", "error", () => `the file holds no YAML document (empty or only comments)`),
  AliasLimit: entry<{ detail: string }>("CA2005", "error", (a) => `YAML aliases expand too far: ${a.detail}`),
  NotAMapping: entry<{ found: string }>("CA2006", "error", (a) => `a contract document must be a mapping, found ${a.found}`),
  UnknownKind: entry<{ kind: string; allowed: string }>(
    "CA2007",
    "error",
    (a) => `unknown kind ${q(a.kind)}; expected one of ${a.allowed}`,
  ),
  UnsupportedApiVersion: entry<{ apiVersion: string }>(
    "CA2008",
    "error",
    (a) => `unsupported apiVersion ${q(a.apiVersion)}; this compiler reads "contract-assets/v1"`,
  ),
  YamlWarning: entry<{ detail: string }>("CA2009", "warning", (a) => `YAML: ${a.detail}`),
  NonJsonValue: entry<{ value: string }>(
    "CA2010",
    "error",
    (a) => `the value ${a.value} cannot be carried in JSON (Airflow extra and the manifest are JSON)`,
  ),
  UnsafeInteger: entry<{ value: string }>(
    "CA2011",
    "error",
    (a) => `the integer ${a.value} is outside the range that JSON tools read exactly (±2^53)`,
  ),
  NonStringKey: entry<{ key: string }>("CA2013", "error", (a) => `the key ${a.key} is not a plain string`),
  UnsupportedTag: entry<{ tag: string }>(
    "CA2014",
    "error",
    (a) => `the YAML tag ${q(a.tag)} is not supported; contracts use the YAML 1.2 core schema (strings, numbers, booleans, null, lists, mappings)`,
  ),
  DocumentTooDeep: entry<{ limit: number }>(
    "CA2015",
    "error",
    (a) => `the document nests deeper than ${a.limit} levels of mappings and lists (a contract nests about 8); this is the first one too deep`,
  ),
  MisplacedDocument: entry<{ kind: string; folder: string }>(
    "CA2012",
    "error",
    (a) => `a document of kind ${q(a.kind)} belongs under ${a.folder}`,
  ),
  NotOdcs: entry("CA2602", "error", () => `not an ODCS data contract: "import odcs" reads documents of kind "DataContract" with an apiVersion such as "v3.1.0"`),
  OdcsVersionUnsupported: entry<{ apiVersion: string }>(
    "CA2601",
    "error",
    (a) => `ODCS ${a.apiVersion} is not supported; this compiler reads ODCS v3 data contracts (apiVersion v3.0.0 or later)`,
  ),

  // 3: validate (schema and per-document rules)
  UnknownField: entry<{ field: string; where: string }>("CA3001", "error", (a) => `unknown field ${q(a.field)} in ${a.where}`),
  WrongType: entry<{ field: string; expected: string; found: string }>(
    "CA3002",
    "error",
    (a) => `${q(a.field)} must be ${a.expected}, found ${a.found}`,
  ),
  MissingField: entry<{ field: string; where: string }>("CA3003", "error", (a) => `missing required field ${q(a.field)} in ${a.where}`),
  BadEnum: entry<{ field: string; value: string; allowed: string }>(
    "CA3004",
    "error",
    (a) => `${q(a.field)} is ${a.value}; allowed values: ${a.allowed}`,
  ),
  BadFormat: entry<{ field: string; value: string; expected: string }>(
    "CA3005",
    "error",
    (a) => `${q(a.field)} is ${a.value}, which is not ${a.expected}`,
  ),
  SchemaViolation: entry<{ field: string; detail: string }>("CA3006", "error", (a) => `${q(a.field)} ${a.detail}`),
  UriEmpty: entry("CA3010", "error", () => `the uri is empty`),
  UriBlank: entry("CA3011", "error", () => `the uri is only whitespace`),
  UriNonAscii: entry<{ character: string; index: number }>(
    "CA3012",
    "error",
    (a) => `the uri holds the non-ASCII character ${a.character} at index ${a.index}; Airflow stores URIs as ASCII`,
  ),
  UriTooLong: entry<{ length: number }>("CA3013", "error", (a) => `the uri has ${a.length} characters; Airflow allows at most 1500`),
  UriReservedScheme: entry<{ scheme: string }>(
    "CA3014",
    "error",
    (a) => `the uri scheme ${q(a.scheme)} is reserved by Airflow`,
  ),
  UriUserInfo: entry<{ uri: string }>(
    "CA3015",
    "error",
    (a) => `the uri ${q(a.uri)} carries user info; Airflow drops it silently and credentials belong in a Connection`,
  ),
  UriPlaceholder: entry<{ placeholder: string }>(
    "CA3016",
    "error",
    (a) => `the uri holds the unresolved placeholder ${q(a.placeholder)}`,
  ),
  UriMalformed: entry<{ uri: string }>("CA3017", "error", (a) => `the uri ${q(a.uri)} has no scheme; write it as "scheme://location"`),
  UriQueryCredential: entry<{ uri: string; parameter: string }>(
    "CA3049",
    "error",
    (a) => `the uri ${q(a.uri)} carries the credential ${q(a.parameter)} in its query string; Airflow stores the query as part of the Asset URI and credentials belong in a Connection`,
  ),
  UriRefused: entry<{ uri: string; reason: string }>("CA3048", "error", (a) => `Airflow refuses the uri ${q(a.uri)}: ${a.reason}`),
  UriWhitespace: entry<{ uri: string }>("CA3043", "error", (a) => `the uri ${q(a.uri)} contains whitespace`),
  IdDomainMismatch: entry<{ id: string; domain: string }>(
    "CA3044",
    "error",
    (a) => `the contract id ${q(a.id)} does not start with its domain ${q(a.domain)}; write it as "${a.domain}.<name>"`,
  ),
  FreshnessColumnUnknown: entry<{ column: string }>(
    "CA3501",
    "error",
    (a) => `freshness.column ${q(a.column)} is not a property of any dataset of this contract`,
  ),
  FreshnessColumnType: entry<{ column: string; dataset: string; logicalType: string }>(
    "CA3502",
    "error",
    (a) => `freshness.column ${q(a.column)} of dataset ${q(a.dataset)} has logicalType ${q(a.logicalType)}; data time needs "timestamp" or "date"`,
  ),
  LogicalDateDeadlineOnAssets: entry(
    "CA3503",
    "error",
    () => `a "logical_date" deadline is never created for an asset-triggered DAG: Airflow 3.2 gives asset-triggered runs no logical date`,
  ),
  ExternalFreshnessUnpublished: entry<{ name: string }>(
    "CA3504",
    "error",
    (a) => `the external asset ${q(a.name)} has a freshness policy but no DAG publishes its events; name the system that posts them in "published_by"`,
  ),
  NameReserved: entry<{ name: string }>("CA3018", "error", (a) => `the name ${q(a.name)} is reserved by Airflow`),
  NameTooLong: entry<{ name: string; length: number }>(
    "CA3019",
    "error",
    (a) => `the asset name ${q(a.name)} has ${a.length} characters; Airflow allows at most 1500`,
  ),
  InvalidCron: entry<{ cron: string; detail: string }>("CA3020", "error", (a) => `invalid cron expression ${q(a.cron)}: ${a.detail}`),
  InvalidTimezone: entry<{ timezone: string }>("CA3021", "error", (a) => `unknown IANA time zone ${q(a.timezone)}`),
  InvalidDuration: entry<{ value: string }>(
    "CA3022",
    "error",
    (a) => `invalid duration ${q(a.value)}: an ISO-8601 duration of weeks, days, hours, minutes or seconds between 1 second and 10 years, like "PT26H" or "P1DT2H"`,
  ),
  PiiWithoutLegalBasis: entry<{ property: string }>(
    "CA3023",
    "error",
    (a) => `the property ${q(a.property)} is classified "pii" but the contract declares no processing.legal_basis`,
  ),
  PathOutsideProject: entry<{ path: string }>("CA3024", "error", (a) => `the path ${q(a.path)} leaves the project`),
  NoTrigger: entry(
    "CA3025",
    "error",
    () => `the contract has no triggering upstream and no cron; add a trigger or write "trigger: manual"`,
  ),
  DuplicateProperty: entry<{ property: string }>("CA3026", "error", (a) => `the property ${q(a.property)} is declared twice`),
  DuplicateDataset: entry<{ dataset: string }>("CA3027", "error", (a) => `the dataset ${q(a.dataset)} is declared twice`),
  ReservedExtraKey: entry<{ key: string }>(
    "CA3028",
    "error",
    (a) => `the extra key ${q(a.key)} is computed by the compiler and cannot be set by hand`,
  ),
  QualityUnknownColumn: entry<{ column: string; dataset: string }>(
    "CA3029",
    "error",
    (a) => `the quality rule names the column ${q(a.column)}, which the dataset ${q(a.dataset)} does not declare`,
  ),
  QualityOperatorCount: entry<{ count: number }>(
    "CA3030",
    "error",
    (a) => `a quality rule needs exactly one mustBe… operator, found ${a.count}`,
  ),
  QualityMissingColumn: entry<{ metric: string }>("CA3031", "error", (a) => `the metric ${q(a.metric)} needs a "column"`),
  QualityMissingValidValues: entry("CA3032", "error", () => `the metric "invalidValues" needs "validValues"`),
  QualityBadRange: entry<{ operator: string }>(
    "CA3033",
    "error",
    (a) => `${q(a.operator)} takes two numbers [low, high] with low <= high`,
  ),
  QualitySqlPlaceholder: entry(
    "CA3034",
    "error",
    () => `a "type: sql" quality rule must read the table under audit through "{dataset}"`,
  ),
  DuplicateQualityName: entry<{ name: string }>("CA3035", "error", (a) => `two quality rules of a dataset are named ${q(a.name)}`),
  DuplicateUpstream: entry<{ asset: string }>("CA3036", "error", (a) => `the upstream ${q(a.asset)} is listed twice`),
  DegradeBeforeMaxAge: entry<{ maxAge: string; degradeAfter: string }>(
    "CA3037",
    "error",
    (a) => `freshness.degrade_after ${q(a.degradeAfter)} is shorter than max_age ${q(a.maxAge)}`,
  ),
  SourceNameClash: entry<{ name: string }>(
    "CA3038",
    "error",
    (a) => `the source name ${q(a.name)} is also a dataset of this contract`,
  ),
  TagTooLong: entry<{ tag: string; length: number }>(
    "CA3042",
    "error",
    (a) => `the tag ${q(a.tag)} has ${a.length} characters; Airflow allows at most 100`,
  ),
  CredentialInText: entry<{ field: string; what: string }>(
    "CA3045",
    "error",
    (a) => `${q(a.field)} holds a URI with ${a.what}; credentials belong in an Airflow Connection, never in a contract`,
  ),
  SourceAsUpstream: entry<{ name: string }>(
    "CA3046",
    "error",
    (a) => `the ingestion source ${q(a.name)} is listed as an upstream of its own contract; the source is read, never waited for`,
  ),
  NestedTooDeep: entry<{ field: string; depth: number; limit: number }>(
    "CA3047",
    "error",
    (a) => `${q(a.field)} nests ${a.depth} levels deep; generated Python allows at most ${a.limit}`,
  ),
  ExtractShape: entry<{ problem: string }>("CA3301", "error", (a) => `mode "extract" ${a.problem}`),
  LoadShape: entry<{ field: string }>(
    "CA3302",
    "error",
    (a) => `${q(a.field)} is for mode "extract"; a mode "load" contract reads source.uri`,
  ),
  ManualWithSchedule: entry(
    "CA3039",
    "error",
    () => `"trigger: manual" cannot be combined with triggering upstreams; mark them "trigger: false"`,
  ),
  UnimplementedProducer: entry<{ type: string; implemented: string }>(
    "CA3101",
    "error",
    (a) => `the producer type ${q(a.type)} has no runtime in contract_runtime; use one of ${a.implemented}`,
  ),

  OdcsOrchestrationMissing: entry<{ field: string; reason: string }>(
    "CA3601",
    "error",
    (a) => `the ODCS contract has no ${a.field}; ${a.reason}`,
  ),
  OdcsCustomPropertyTwice: entry<{ property: string }>(
    "CA3602",
    "error",
    (a) => `the custom property ${q(a.property)} is set twice in the same list`,
  ),
  OdcsQualityNotRun: entry<{ rule: string; reason: string }>(
    "CA3603",
    "warning",
    (a) => `the ODCS quality rule ${a.rule} is not run by the audit task: ${a.reason}`,
  ),
  OdcsImportTargetTaken: entry<{ path: string; first: string }>(
    "CA3605",
    "error",
    (a) => `this ODCS document declares the contract id ${q(a.path)}, as ${q(a.first)} does; it is not imported`,
  ),
  OdcsImportWouldOverwrite: entry<{ target: string }>(
    "CA3606",
    "error",
    (a) => `${q(a.target)} exists with other content (perhaps the contract this document was exported from); it is not overwritten: pass --force to replace it, or --out another folder`,
  ),
  OdcsFieldNotHonoured: entry<{ field: string; reason: string }>(
    "CA3604",
    "warning",
    (a) => `${a.field} is not honoured in Airflow: ${a.reason}`,
  ),
  QualitySqlUnknownPlaceholder: entry<{ placeholder: string }>(
    "CA3801",
    "error",
    (a) => `the quality query holds ${q(a.placeholder)}, which is not a placeholder: only "{dataset}" is replaced, anything else reaches the database as written`,
  ),
  TemplateInLineageText: entry<{ field: string; placeholder: string }>(
    "CA3802",
    "error",
    (a) => `${a.field} holds the unresolved template placeholder ${q(a.placeholder)}; it reaches Airflow and lineage as written`,
  ),
  DuplicateTriggerMember: entry<{ field: string; op: string }>(
    "CA3804",
    "warning",
    (a) => `${q(a.field)} repeats a member of the same "${a.op}"; it adds nothing to the condition and is left out of the schedule`,
  ),
  NumberNotAsWritten: entry<{ field: string; written: string; printed: string }>(
    "CA3803",
    "warning",
    (a) => `${a.field} is written ${a.written} but is the number ${a.printed} (YAML 1.2), which is what Airflow and lineage receive`,
  ),

  // 4: link
  DuplicateContractId: entry<{ id: string }>("CA4001", "error", (a) => `the contract id ${q(a.id)} is declared twice`),
  DuplicateAssetName: entry<{ name: string }>("CA4003", "error", (a) => `the asset name ${q(a.name)} is declared twice`),
  DuplicateAssetUri: entry<{ uri: string; normalised: string; other: string }>(
    "CA4004",
    "error",
    (a) => `the uri ${q(a.uri)} is the same as that of ${q(a.other)} once Airflow normalises it to ${q(a.normalised)}`,
  ),
  UnknownUpstream: entry<{ asset: string }>(
    "CA4005",
    "error",
    (a) => `unknown upstream asset ${q(a.asset)}; declare it in an ExternalAssets document or an ingestion source if it is external`,
  ),
  RetiredUpstream: entry<{ asset: string; contract: string }>(
    "CA4006",
    "error",
    (a) => `the upstream ${q(a.asset)} is produced by the retired contract ${q(a.contract)}`,
  ),
  DeprecatedUpstream: entry<{ asset: string; contract: string }>(
    "CA4007",
    "warning",
    (a) => `the upstream ${q(a.asset)} is produced by the deprecated contract ${q(a.contract)}`,
  ),
  SchemaVersionMismatch: entry<{ asset: string; pinned: number; actual: number }>(
    "CA4008",
    "error",
    (a) => `the upstream ${q(a.asset)} is pinned to schema_version ${a.pinned} but its schema is at version ${a.actual}`,
  ),
  ConflictingExternal: entry<{ name: string; uri: string; other: string }>(
    "CA4009",
    "error",
    (a) => `the external asset ${q(a.name)} is declared with the uri ${q(a.uri)} here and ${q(a.other)} elsewhere`,
  ),
  UnknownScheduleRef: entry<{ ref: string }>("CA4010", "error", (a) => `unknown schedule_ref ${q(a.ref)}`),
  UnknownProducerFamily: entry<{ family: string }>("CA4011", "error", (a) => `unknown producer family ${q(a.family)}`),
  DraftUpstream: entry<{ asset: string; contract: string }>(
    "CA4012",
    "error",
    (a) => `the upstream ${q(a.asset)} is produced by the draft contract ${q(a.contract)}, which has no DAG yet`,
  ),
  TriggerNotUpstream: entry<{ asset: string }>(
    "CA3040",
    "error",
    (a) => `the trigger names ${q(a.asset)}, which is not a triggering upstream of this contract`,
  ),
  TriggerMissesUpstream: entry<{ asset: string }>(
    "CA3041",
    "warning",
    (a) => `the triggering upstream ${q(a.asset)} appears nowhere in trigger.assets; mark it "trigger: false" if it is only read`,
  ),
  RequireOnReadOnlyUpstream: entry<{ asset: string }>(
    "CA3201",
    "error",
    (a) => `"require: passed" on the upstream ${q(a.asset)} checks nothing: it is "trigger: false", so no event of it triggers a run`,
  ),
  ConfigConflict: entry<{ key: string }>(
    "CA4015",
    "error",
    (a) => `the orchestration config key ${q(a.key)} is set in two files`,
  ),
  UnknownOverrideTarget: entry<{ target: string }>(
    "CA4016",
    "warning",
    (a) => `the override matches ${q(a.target)}, which no contract declares`,
  ),
  ConflictingExternalDeclaration: entry<{ name: string; field: string }>(
    "CA4019",
    "error",
    (a) => `the external asset ${q(a.name)} is declared twice with a different ${a.field}`,
  ),
  TemplatePlaceholder: entry<{ placeholder: string }>(
    "CA4017",
    "error",
    (a) => `uri_template is not usable: ${q(a.placeholder)}; it takes the placeholders {layer}, {domain} and {name}`,
  ),
  ExternalProducedClash: entry<{ name: string }>(
    "CA4018",
    "error",
    (a) => `the asset ${q(a.name)} is declared external but is also produced by a contract`,
  ),
  // 4: link, identities beyond Airflow's (issue 38)
  DuplicateLineageIdentity: entry<{ asset: string; namespace: string; name: string; via: string; other: string }>(
    "CA4020",
    "error",
    (a) => `the dataset ${q(a.asset)} has the lineage identity ${q(a.namespace)} ${q(a.name)} (from its ${a.via}), the same as ${q(a.other)}: OpenLineage would record both as one dataset`,
  ),
  IdentifierTooLong: entry<{ kind: string; identifier: string; bytes: number; warehouse: string; limit: number; truncated: string }>(
    "CA4021",
    "error",
    (a) => `the ${a.kind} name ${q(a.identifier)} has ${a.bytes} bytes; ${a.warehouse} keeps at most ${a.limit} bytes of an identifier and would name it ${q(a.truncated)}`,
  ),
  TruncatedIdentifierClash: entry<{ kind: string; identifier: string; other: string; warehouse: string; truncated: string }>(
    "CA4022",
    "error",
    (a) => `the ${a.kind} ${q(a.identifier)} and the ${a.kind} ${q(a.other)} are one ${a.kind} ${q(a.truncated)} in ${a.warehouse}, which truncates identifiers`,
  ),
  UnknownNotifier: entry<{ name: string }>("CA4501", "error", (a) => `unknown notifier ${q(a.name)}; declare it under "notifiers"`),
  DeadlineWithoutNotifier: entry(
    "CA4502",
    "error",
    () => `freshness.expected_runtime needs a notifier for its DeadlineAlert: set "deadline_notifier" or "freshness_monitor.notifier" in the orchestration config`,
  ),
  CronSlowerThanMaxAge: entry<{ cron: string; gap: string; maxAge: string }>(
    "CA4503",
    "warning",
    (a) => `the producer's cron ${q(a.cron)} leaves up to ${a.gap} between runs, longer than freshness.max_age ${q(a.maxAge)}: the dataset goes stale before every such run`,
  ),
  // 4: link, partitions (issue 35; ADR 0028)
  PartitionColumnMissing: entry<{ column: string; dataset: string }>(
    "CA4601",
    "error",
    (a) => `the partition column ${q(a.column)} is not a property of the dataset ${q(a.dataset)}: every dataset of a partitioned contract needs it`,
  ),
  PartitionColumnNotTemporal: entry<{ column: string; dataset: string; logicalType: string }>(
    "CA4602",
    "error",
    (a) => `the partition column ${q(a.column)} of ${q(a.dataset)} is ${a.logicalType}; it must be logicalType date or timestamp (a row's period is read from it)`,
  ),
  PartitionCronNotUtc: entry<{ timezone: string }>(
    "CA4603",
    "error",
    (a) => `a partitioned contract's cron runs in UTC (Airflow 3.2 formats partition keys from UTC dates whatever the time zone), not ${q(a.timezone)}: drop the timezone or write the cron in UTC`,
  ),
  PartitionCronTooRare: entry<{ cron: string; gap: string; grain: string }>(
    "CA4604",
    "error",
    (a) => `the cron ${q(a.cron)} leaves up to ${a.gap} between fires, longer than one ${a.grain}: the ${a.grain} keys in between would never run (fire at least once per ${a.grain})`,
  ),
  PartitionQuarterOnCron: entry<{ cron: string }>(
    "CA4605",
    "error",
    (a) => `grain quarter cannot run on a cron (${q(a.cron)}): Airflow 3.2's CronPartitionTimetable formats keys with strftime, which has no quarter; partition by month, or let the quarter follow a finer upstream`,
  ),
  PartitionCronAndAssets: entry<{ cron: string }>(
    "CA4606",
    "error",
    (a) => `a partitioned contract runs either on its cron (${q(a.cron)}) or on its triggering upstreams, not both: Airflow 3.2's AssetOrTimeSchedule carries no partition keys`,
  ),
  UnpartitionedConsumerOfPartitioned: entry<{ upstream: string; grain: string }>(
    "CA4607",
    "error",
    (a) => `${q(a.upstream)} is partitioned by ${a.grain} and triggers this contract, which is not partitioned: Airflow 3.2 never queues a DAG that is not partitioned for an event with a partition key, so this DAG would never run; declare "partitioning" here, or read ${q(a.upstream)} with trigger: false`,
  ),
  PartitionedConsumerOfUnpartitioned: entry<{ upstream: string; what: string }>(
    "CA4608",
    "error",
    (a) => `${q(a.upstream)} (${a.what}) triggers this partitioned contract, but its Asset events carry no partition key: Airflow 3.2 drops them ("missing partition key"), so the condition never holds through it; read it with trigger: false`,
  ),
  PartitionCoarserUpstream: entry<{ upstream: string; upstreamGrain: string; grain: string }>(
    "CA4609",
    "error",
    (a) => `${q(a.upstream)} is partitioned by ${a.upstreamGrain}, coarser than this contract's ${a.grain}: no partition mapper splits a ${a.upstreamGrain} key into ${a.grain} keys, so this DAG would never run; partition this contract by ${a.upstreamGrain} or coarser`,
  ),
  PartitionMisalignedUpstream: entry<{ upstream: string; upstreamGrain: string; grain: string }>(
    "CA4610",
    "error",
    (a) => `${q(a.upstream)} is partitioned by ${a.upstreamGrain}, which does not align with this contract's ${a.grain}: a week can span two of them, and Airflow 3.2 has no mapper for it; partition this contract by week, or the upstream by day`,
  ),
  PartitionPlaceholderUnpartitioned: entry<{ field: string }>(
    "CA4611",
    "error",
    (a) => `${a.field} holds the placeholder {partition}, but this contract is not partitioned: only a run with a partition key can fill it, so every run would read the literal text; declare "partitioning", or remove the placeholder`,
  ),
  // 4: link, event-driven ingestion (issue 36; ADR 0034)
  QueueTriggerNotLoad: entry<{ what: string }>(
    "CA4620",
    "error",
    (a) => `trigger.queue is for an ingestion contract of mode load, and this is ${a.what}: only a load reads the objects a queue message names`,
  ),
  QueueTriggerNotAlone: entry<{ other: string }>(
    "CA4621",
    "error",
    (a) => `trigger.queue cannot be combined with ${a.other}: an event-driven ingestion runs when a message arrives, and on nothing else; remove one of them`,
  ),
  QueueUrlMalformed: entry<{ url: string; detail: string }>(
    "CA4622",
    "error",
    (a) => `${q(a.url)} is not an SQS queue URL (${a.detail}); write it as "https://sqs.<region>.amazonaws.com/<account id>/<queue name>", or an endpoint's "http(s)://<host>/<account id>/<queue name>"`,
  ),
  QueueTriggerPartitioned: entry(
    "CA4623",
    "error",
    () => `a partitioned contract cannot run on trigger.queue: Airflow 3.2's AssetWatcher events carry no partition key, and an event without one never starts a partitioned DAG ("missing partition key"); drop "partitioning", or run on a cron`,
  ),
  QueueTriggerOnManifestSource: entry<{ extract: string }>(
    "CA4624",
    "error",
    (a) => `this load's source is the dataset of the extract contract ${q(a.extract)}, whose manifest's Asset event triggers it: a queue has nothing to add; remove trigger.queue`,
  ),
  QueueSourceNotS3: entry<{ uri: string }>(
    "CA4625",
    "error",
    (a) => `trigger.queue reads S3 event notifications, so source.uri must be an s3:// location, not ${q(a.uri)}`,
  ),
  QueueFieldWithoutQueue: entry<{ field: string }>(
    "CA4626",
    "error",
    (a) => `trigger.${a.field} is set without trigger.queue: it configures the queue's watcher; add trigger.queue or remove it`,
  ),
  // 4: link, dbt projects (issue 11; ADR 0012)
  DbtManifestMissing: entry<{ project: string; manifest: string }>(
    "CA4401",
    "error",
    (a) => `the dbt project ${q(a.project)} has no parsed manifest ${q(a.manifest)}`,
  ),
  DbtManifestUnreadable: entry<{ manifest: string; detail: string }>(
    "CA4402",
    "error",
    (a) => `the dbt manifest ${q(a.manifest)} cannot be used: ${a.detail}`,
  ),
  DbtSelectorUnsupported: entry<{ selector: string }>(
    "CA4403",
    "error",
    (a) => `the selector ${q(a.selector)} is not a model name or tag:<tag>; list the contract's models`,
  ),
  DbtModelUnknown: entry<{ model: string; project: string }>(
    "CA4404",
    "error",
    (a) => `the dbt project ${q(a.project)} has no model ${q(a.model)}`,
  ),
  DbtDatasetWithoutModel: entry<{ dataset: string; project: string; select: string }>(
    "CA4405",
    "error",
    (a) => `the dataset ${q(a.dataset)} is no model that select ${q(a.select)} picks in the dbt project ${q(a.project)}`,
  ),
  DbtModelWithoutDataset: entry<{ model: string; file: string }>(
    "CA4406",
    "error",
    (a) => `select picks the dbt model ${q(a.model)} (${a.file}), which is no dataset of this contract`,
  ),
  DbtColumnMissing: entry<{ property: string; model: string; file: string }>(
    "CA4407",
    "error",
    (a) => `the property ${q(a.property)} is no column of the dbt model ${q(a.model)} (${a.file})`,
  ),
  DbtColumnExtra: entry<{ column: string; model: string; file: string }>(
    "CA4408",
    "error",
    (a) => `the dbt model ${q(a.model)} declares the column ${q(a.column)} (${a.file}), which the dataset's schema lacks`,
  ),
  DbtUndeclaredUpstream: entry<{ model: string; file: string; asset: string; via: string }>(
    "CA4409",
    "error",
    (a) => `the dbt model ${q(a.model)} (${a.file}) reads ${q(a.asset)} through ${a.via}, which the contract does not list as an upstream`,
  ),
  DbtRefUnpublished: entry<{ model: string; file: string; ref: string }>(
    "CA4410",
    "error",
    (a) => `the dbt model ${q(a.model)} (${a.file}) refs the model ${q(a.ref)}, which no contract publishes`,
  ),
  DbtModelRelocated: entry<{ model: string; file: string; config: string }>(
    "CA4411",
    "error",
    (a) => `the dbt model ${q(a.model)} (${a.file}) sets its own ${a.config}; the runtime decides where models build (staging, then the published table)`,
  ),

  UnreadExternalAsset: entry<{ asset: string }>(
    "CA4801",
    "warning",
    (a) => `the external asset ${q(a.asset)} is read by no contract: it reaches no DAG, so Airflow never has it`,
  ),

  // 5: graph
  Cycle: entry<{ members: string }>("CA5001", "error", (a) => `dependency cycle: ${a.members}`),

  // 7: diff
  BreakingChange: entry<{ rule: string; message: string }>("CA7001", "error", (a) => `breaking change ${a.rule}: ${a.message}`),
  PreviousManifestUnreadable: entry<{ path: string; detail: string }>(
    "CA7002",
    "error",
    (a) => `cannot read the previous manifest ${JSON.stringify(a.path)}: ${a.detail}`,
  ),
  BreakingWithoutMajorVersion: entry<{ message: string }>("CA7701", "error", (a) => a.message),
  AdditiveWithoutMinorVersion: entry<{ message: string }>("CA7702", "warning", (a) => a.message),

  // 8: preflight (the runtime's environment checks a compiled project: `contract-assets preflight`)
  PreflightEntrypoint: entry<{ entrypoint: string; detail: string }>(
    "CA8801",
    "error",
    (a) => `the entrypoint ${q(a.entrypoint)} does not load in the runtime's environment: ${a.detail}`,
  ),
  PreflightSqlParse: entry<{ detail: string }>("CA8802", "error", (a) => `the SQL does not parse: ${a.detail}`),
  PreflightQualitySqlParse: entry<{ rule: string; detail: string }>(
    "CA8803",
    "error",
    (a) => `the query of quality rule ${q(a.rule)} does not parse: ${a.detail}`,
  ),
  PreflightConnectionMissing: entry<{ connId: string; detail: string }>(
    "CA8804",
    "error",
    (a) => `the Airflow Connection ${q(a.connId)} is not defined${a.detail ? ` (${a.detail})` : ""}`,
  ),
  PreflightWarehouseConnectionMissing: entry<{ connId: string }>(
    "CA8805",
    "error",
    (a) => `the warehouse Connection ${q(a.connId)} is not defined: every task of the contract fails`,
  ),
  PreflightNotRun: entry<{ detail: string }>("CA8806", "error", (a) => `preflight could not run in the runtime's environment: ${a.detail}`),
  PreflightSqlNotParsed: entry<{ detail: string }>("CA8807", "info", (a) => `SQL not parsed: ${a.detail}`),

  // 9: write
  CheckDrift: entry<{ path: string; change: string }>(
    "CA9001",
    "error",
    (a) => `${q(a.path)} is ${a.change}; run "contract-assets compile" and commit the result`,
  ),
  ForeignFileInOutput: entry<{ path: string }>(
    "CA9002",
    "warning",
    (a) => `${q(a.path)} has no generated header and was left untouched; move hand-written files out of generated/`,
  ),
  WriteFailed: entry<{ path: string; reason: string }>("CA9003", "error", (a) => `cannot write ${q(a.path)}: ${a.reason}`),
  CacheNotWritten: entry<{ path: string; reason: string; others: number }>(
    "CA9950",
    "info",
    (a) =>
      `cannot write the incremental cache's ${q(a.path)}: ${a.reason}${a.others > 0 ? ` (and ${a.others} more)` : ""}; the output is complete, and the next compile parses these files again`,
  ),
  ModuleIndexNotWritten: entry<{ path: string; reason: string; others: number }>(
    "CA9951",
    "info",
    (a) =>
      `cannot write the incremental cache's ${q(a.path)}: ${a.reason}${a.others > 0 ? ` (and ${a.others} more)` : ""}; the output is complete, and the next compile renders every DAG module again`,
  ),
  RecordIndexNotWritten: entry<{ path: string; reason: string; others: number }>(
    "CA9952",
    "info",
    (a) =>
      `cannot write the incremental cache's ${q(a.path)}: ${a.reason}${a.others > 0 ? ` (and ${a.others} more)` : ""}; the output is complete, and the next compile writes out every record of the manifest again`,
  ),
  CompileStateNotWritten: entry<{ path: string; reason: string; others: number }>(
    "CA9953",
    "info",
    (a) =>
      `cannot write the incremental cache's ${q(a.path)}: ${a.reason}${a.others > 0 ? ` (and ${a.others} more)` : ""}; the output is complete, and the next compile compiles the whole project`,
  ),
  InitWouldOverwrite: entry("CA9901", "error", () => `the file exists already; init overwrites no file, so nothing was written`),
} as const;

export type DiagnosticEntry = (typeof Diagnostics)[keyof typeof Diagnostics];
type ArgsOf<E> = E extends Entry<infer A> ? A : never;

/** Optional parts of a diagnostic besides the catalogue's message. */
export interface DiagnosticExtras {
  related?: RelatedLocation[];
  hint?: string;
  severity?: Severity;
}

/**
 * The codes that say a document holds a credential (user info or a query-string credential in a
 * URI, ADR 0027): the pipeline keeps such a document out of the parse cache.
 */
export const CREDENTIAL_CODES: ReadonlySet<string> = new Set([
  Diagnostics.UriUserInfo.code,
  Diagnostics.UriQueryCredential.code,
  Diagnostics.CredentialInText.code,
]);

/**
 * The only way to make a diagnostic: a catalogue entry, its message arguments and where it points.
 */
export function createDiagnostic<E extends DiagnosticEntry>(
  e: E,
  args: ArgsOf<E>,
  location: SourceLocation | undefined,
  extras: DiagnosticExtras = {},
): Diagnostic {
  const d: Diagnostic = {
    code: e.code,
    severity: extras.severity ?? e.severity,
    message: (e.message as (a: ArgsOf<E>) => string)(args),
    related: extras.related ?? [],
  };
  if (location) d.location = location;
  if (extras.hint !== undefined) d.hint = extras.hint;
  return d;
}

/** Every catalogue entry as `[code, severity]`, for the catalogue's own test and documentation. */
export function listCodes(): Array<{ code: string; severity: Severity; name: string }> {
  return Object.entries(Diagnostics).map(([name, e]) => ({ code: e.code, severity: e.severity, name }));
}
