import type { Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import type { AssetWatcherPlan, DeadlinePlan } from "../model/manifest.js";
import type { Contract, ExternalAssetsDocument, RunSettings, Status } from "../model/contract.js";
import type { Located } from "../validate/validateDocuments.js";
import type { OrchestrationConfig } from "./config.js";
import type { RenameCandidate } from "../support/renames.js";

/** One Airflow Asset: produced by a contract's dataset, or external. */
export interface AssetDeclaration {
  name: string;
  uri: string;
  group: string;
  /** Computed extra (DESIGN §3.3), identical wherever the Asset is rendered. */
  extra: Record<string, unknown>;
  external: boolean;
  /** The producing contract's id; absent for externals. */
  producer?: string;
  /** The producing contract's status; externals count as active. */
  status: Status;
  /** Project-relative path of the declaring document. */
  declaredIn: string;
  /**
   * Where the Asset is declared, and its uri (its name, for a dataset without one). A produced
   * dataset's three locations are getters that locate when first read, once: only a link rule
   * reporting reads them (`buildAssetTable`).
   */
  location: SourceLocation;
  uriLocation: SourceLocation;
  /** Schema version of a produced dataset (or of an ingestion source, when declared). */
  schemaVersion?: number;
  schemaVersionLocation?: SourceLocation;
  /** An external asset with a freshness policy: the system that posts its Asset events. */
  publishedBy?: string;
  /** An event-driven ingestion's source: its AssetWatcher (`queueWatcherOf`, ADR 0034). */
  watchers?: AssetWatcherPlan[];
}

/** A contract's upstream after resolution. */
export interface ResolvedUpstream {
  asset: string;
  trigger: boolean;
  schemaVersion?: number;
  require?: "passed";
  /** The upstream's `asset` in its contract: a getter that locates when first read, once (only a rule reporting reads it). */
  location: SourceLocation;
}

/** A contract with everything the later stages need resolved. */
export interface LinkedContract {
  located: Located<Contract>;
  contract: Contract;
  status: Status;
  /** Contract file text hashes over LF-normalised text, so CRLF checkouts hash the same. */
  sha256: string;
  gitBlob: string;
  outlets: AssetDeclaration[];
  upstreams: ResolvedUpstream[];
  /** For ingestion: the external source asset read (an inlet). */
  sourceAsset?: string;
  /**
   * For a load whose source is an extract contract's dataset: that contract and its landing
   * location (the load reads the manifests under it; the source also triggers the DAG).
   */
  manifestSource?: { contract: string; uri: string; connection_id?: string; sampleData: boolean };
  runSettings: RunSettings;
  timetable?: { cron: string; timezone: string };
  /** The DeadlineAlert of `freshness.expected_runtime` (absent without one or without a notifier). */
  deadline?: DeadlinePlan;
  /**
   * A `dbt` producer resolved against its project (`resolveDbtProducer`), once in link: its
   * findings are ConsistentDbtProjectRule's, the rest is what plan writes into the runtime.
   */
  dbt?: DbtResolution;
}

/** The link stage's output. */
export interface LinkedProject {
  config: OrchestrationConfig;
  /** Producer files (SQL) by project-relative path, carried into the manifest for the runtime. */
  producerFiles: ReadonlyMap<string, string>;
  /** Asset names refused for an error already reported (a clash, a broken URI template). */
  refused: ReadonlySet<string>;
  contracts: LinkedContract[];
  /** Every asset by name, produced and external. */
  assets: Map<string, AssetDeclaration>;
}

/** What the link stage knows of the world beyond the validated documents. */
export interface LinkContext {
  /** Producer files (SQL) by project-relative path, LF line ends (from discover). */
  producerFiles: ReadonlyMap<string, string>;
  /**
   * Assets of the previous manifest, by name, for rename hints (`support/renames.ts`); undefined
   * without a previous state. A function, called only when a hint needs it: reading the previous
   * state costs a parse and a schema check that a compile without unknown names does without.
   */
  previousAssets?: () => ReadonlyMap<string, Omit<RenameCandidate, "name">> | undefined;
  unresolvedNames: ReadonlySet<string>;
  /** Contract ids of documents that failed validation. */
  unresolvedIds?: ReadonlySet<string>;
  /** An orchestration config file failed validation: schedule and producer names are unknown. */
  configBroken?: boolean;
  /** A contract file failed to parse (YAML): what it declares and reads is unknown. */
  contractsUnparsed?: boolean;
}

/**
 * A declaration the asset table did not take as it stands, recorded as a fact for the clash rules
 * to report: `name` and `uri` clashes are refused (their name is then in `refused`), an
 * `externalUri` conflict is dropped, and an `externalDeclaration` difference keeps the first one.
 */
export type AssetClash =
  | { kind: "name"; asset: AssetDeclaration; existing: AssetDeclaration }
  | { kind: "uri"; asset: AssetDeclaration; existing: AssetDeclaration; normalised: string }
  | { kind: "externalUri"; asset: AssetDeclaration; existing: AssetDeclaration }
  | { kind: "externalDeclaration"; asset: AssetDeclaration; existing: AssetDeclaration; field: string };

/** The asset table: every contract id and Asset name of the project, and what clashed. */
export interface AssetTable {
  /** Accepted contracts (first of each id), in file order. */
  contracts: Array<Located<Contract>>;
  /** Accepted contracts by id. */
  ids: Map<string, Located<Contract>>;
  /** A contract whose id an earlier file already declared, with that first one. */
  duplicateIds: Array<{ located: Located<Contract>; first: Located<Contract> }>;
  externals: Array<Located<ExternalAssetsDocument>>;
  assets: Map<string, AssetDeclaration>;
  /** Names refused for an error reported by a rule, so consumers are not told "unknown" too. */
  refused: Set<string>;
  clashes: AssetClash[];
  /** Findings about the URI template and the URIs it expands to (reported by ValidUriTemplateRule). */
  templateFindings: Diagnostic[];
}

/** What a `dbt` producer runs, resolved against its project (what `dags[].runtime.producer` adds). */
export interface DbtResolution {
  manifest: string;
  /** The contract's models in dataset order. */
  models: Array<{ name: string; unique_id: string; path: string }>;
  /** Seeds the models read (built into staging with them). */
  seeds: string[];
  /** Upstream models (other contracts' datasets) -> their published table. */
  upstreamModels: Record<string, { schema: string; name: string }>;
  /** Disagreements, for `ConsistentDbtProjectRule` to report at `path` in the contract. */
  findings: DbtFinding[];
}

/** One disagreement between a contract and its dbt project: a catalogue entry and where. */
export interface DbtFinding {
  entry: (typeof Diagnostics)[keyof typeof Diagnostics];
  args: Record<string, string>;
  /** The contract node at fault (a path for `locate`). */
  path: Array<string | number>;
  hint?: string;
}
