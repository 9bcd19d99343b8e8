import type { Manifest, ManifestAsset } from "../manifest/buildManifest.js";
import type { DagPlan } from "../plan/planDags.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { normaliseUri } from "../support/uri.js";

/**
 * How bad a change is, in the manner of schema breaking-change checkers (graphql-js, buf):
 * `breaking` fails the compile, `dangerous` needs a person's attention, `safe` is informational.
 */
export type ChangeSeverity = "breaking" | "dangerous" | "safe";

/** One finding of the diff: which rule, about which asset, in words, with the evidence. */
export interface Change {
  rule: string;
  severity: ChangeSeverity;
  /** The asset the change is about. */
  asset: string;
  message: string;
  /** The field changed, for per-field rules (`uri`, `schema.properties.amount.logicalType`, …). */
  field?: string;
  before?: unknown;
  after?: unknown;
  /** dag_ids of consumers affected (breaking rules). */
  consumers?: string[];
}

/** What every rule sees: both manifests, indexed. */
export interface DiffContext {
  previous: Manifest;
  current: Manifest;
  before: ReadonlyMap<string, ManifestAsset>;
  after: ReadonlyMap<string, ManifestAsset>;
  /** Old name → new name, declared through `renamed_from` in the current state. */
  renamedTo: ReadonlyMap<string, string>;
  /** dag_id → DAG, per state. */
  dagsBefore: ReadonlyMap<string, DagPlan>;
  dagsAfter: ReadonlyMap<string, DagPlan>;
}

/** A change rule: an ID, a one-sentence purpose, a severity and a detector (rules as data). */
export interface ChangeRule {
  id: string;
  purpose: string;
  severity: ChangeSeverity;
  detect: (context: DiffContext) => Array<Omit<Change, "rule" | "severity">>;
}

type Property = { name: string; logicalType?: string; physicalType?: string; required?: boolean };
type Upstream = { asset: string; trigger?: boolean; schema_version?: number };

const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);
const q = JSON.stringify;

/** Assets present in both states (by name), in name order. */
function kept(context: DiffContext): Array<[ManifestAsset, ManifestAsset]> {
  const out: Array<[ManifestAsset, ManifestAsset]> = [];
  for (const [name, before] of context.before) {
    const after = context.after.get(name);
    if (after) out.push([before, after]);
  }
  return out;
}

function removedNames(context: DiffContext): string[] {
  return [...context.before.keys()].filter((n) => !context.after.has(n));
}

function propertiesOf(asset: ManifestAsset): Map<string, Property> {
  return new Map(((asset.schema?.properties ?? []) as Property[]).map((p) => [p.name, p]));
}

function upstreamsOf(dag: DagPlan | undefined): Upstream[] {
  return ((dag?.runtime as { upstreams?: Upstream[] } | undefined)?.upstreams ?? []) as Upstream[];
}

/** Current consumers (dag_ids) of an asset name, with their upstream entry. */
export function consumersOf(context: DiffContext, asset: string): Array<{ dag: DagPlan; upstream: Upstream }> {
  const out: Array<{ dag: DagPlan; upstream: Upstream }> = [];
  for (const dag of context.dagsAfter.values()) {
    const upstream = upstreamsOf(dag).find((u) => u.asset === asset);
    if (upstream) out.push({ dag, upstream });
  }
  return out.sort((a, b) => compareStrings(a.dag.dag_id, b.dag.dag_id));
}

function extraWithout(extra: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(extra).filter(([k]) => !keys.includes(k)));
}

function qualityByName(asset: ManifestAsset): Map<string, unknown> {
  // Names are unique within a dataset (the compiler decides them; the schema requires them).
  return new Map(asset.quality.map((r) => [r.name, r]));
}

/** Every change rule, in report order within an asset. Add a rule here, with a golden case. */
export const CHANGE_RULES: readonly ChangeRule[] = [
  {
    id: "CONSUMER_UPSTREAM_REMOVED",
    purpose: "A consumer still reads an asset that no contract declares any more, so it would wait forever.",
    severity: "breaking",
    detect: (c) =>
      removedNames(c)
        .filter((name) => !c.renamedTo.has(name))
        .flatMap((name) => {
          const consumers = consumersOf(c, name).map((x) => x.dag.dag_id);
          return consumers.length ? [{ asset: name, consumers, message: `${q(name)} is removed but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} it` }] : [];
        }),
  },
  {
    id: "CONSUMER_NOT_FOLLOWING_RENAME",
    purpose: "A consumer still reads the old name of an asset renamed through renamed_from.",
    severity: "breaking",
    detect: (c) =>
      removedNames(c)
        .filter((name) => c.renamedTo.has(name))
        .flatMap((name) => {
          const consumers = consumersOf(c, name).map((x) => x.dag.dag_id);
          const to = c.renamedTo.get(name)!;
          return consumers.length ? [{ asset: name, consumers, after: to, message: `${q(name)} is renamed to ${q(to)} but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} the old name` }] : [];
        }),
  },
  {
    id: "CONSUMER_UPSTREAM_RETIRED",
    purpose: "A consumer reads an asset whose contract became retired, so no new events will come.",
    severity: "breaking",
    detect: (c) =>
      kept(c)
        .filter(([, a]) => a.status === "retired")
        .flatMap(([, a]) => {
          const consumers = consumersOf(c, a.name).map((x) => x.dag.dag_id);
          return consumers.length ? [{ asset: a.name, consumers, message: `${q(a.name)} is retired but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} it` }] : [];
        }),
  },
  {
    id: "CONSUMER_PIN_MISMATCH",
    purpose: "A consumer pinned the schema version of an upstream whose schema version changed.",
    severity: "breaking",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => b.schema && a.schema && b.schema.version !== a.schema.version)
        .flatMap(([b, a]) => {
          const consumers = consumersOf(c, a.name)
            .filter((x) => x.upstream.schema_version !== undefined && x.upstream.schema_version !== a.schema!.version)
            .map((x) => x.dag.dag_id);
          return consumers.length
            ? [{ asset: a.name, consumers, field: "schema.version", before: b.schema!.version, after: a.schema!.version, message: `the schema of ${q(a.name)} moved from version ${b.schema!.version} to ${a.schema!.version} but ${consumers.map((x) => q(x)).join(", ")} pin${consumers.length === 1 ? "s" : ""} another version` }]
            : [];
        }),
  },
  {
    id: "CONSUMER_RULE_NAMES_REMOVED_PROPERTY",
    purpose: "A consumer's quality rule names a property that its upstream no longer has.",
    severity: "breaking",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const gone = [...propertiesOf(b).keys()].filter((p) => !propertiesOf(a).has(p));
        return gone.flatMap((property) => {
          const word = new RegExp(`\\b${property.replace(/[^A-Za-z0-9_]/g, "")}\\b`);
          const consumers = consumersOf(c, a.name)
            .filter(({ dag }) =>
              dag.runtime.datasets.some((d) =>
                d.quality.some((r) => r.column === property || (r.query !== undefined && word.test(r.query))),
              ),
            )
            .map((x) => x.dag.dag_id);
          return consumers.length
            ? [{ asset: a.name, consumers, field: `schema.properties.${property}`, message: `the property ${q(property)} of ${q(a.name)} is removed but a quality rule of ${consumers.map((x) => q(x)).join(", ")} names it` }]
            : [];
        });
      }),
  },
  {
    id: "ASSET_REMOVED",
    purpose: "An asset is no longer declared; Airflow keeps it until cleaned up (stale).",
    severity: "dangerous",
    detect: (c) =>
      removedNames(c)
        .filter((n) => !c.renamedTo.has(n))
        .map((name) => ({ asset: name, before: c.before.get(name)!.uri, message: `${q(name)} is removed (stale in Airflow until its DAG is gone; check with "contract-assets stale")` })),
  },
  {
    id: "ASSET_PROBABLY_RENAMED",
    purpose: "A removed and an added asset share a URI: likely a rename that forgot renamed_from.",
    severity: "dangerous",
    detect: (c) => {
      const added = [...c.after.values()].filter((a) => !c.before.has(a.name));
      return removedNames(c)
        .filter((n) => !c.renamedTo.has(n))
        .flatMap((name) => {
          const uri = normaliseUri(c.before.get(name)!.uri);
          const twin = added.find((a) => normaliseUri(a.uri) === uri);
          return twin ? [{ asset: name, after: twin.name, message: `${q(name)} looks renamed to ${q(twin.name)} (same URI ${q(c.before.get(name)!.uri)}); declare renamed_from: [${name}] if so` }] : [];
        });
    },
  },
  {
    id: "ASSET_RENAMED",
    purpose: "An asset is renamed through renamed_from.",
    severity: "safe",
    detect: (c) =>
      removedNames(c)
        .filter((n) => c.renamedTo.has(n))
        .map((name) => ({ asset: name, after: c.renamedTo.get(name)!, message: `${q(name)} is renamed to ${q(c.renamedTo.get(name)!)}` })),
  },
  {
    id: "ASSET_RETIRED",
    purpose: "An asset's contract became retired: no more events, and its DAG is removed.",
    severity: "dangerous",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => a.status === "retired" && b.status !== "retired")
        .map(([b, a]) => ({ asset: a.name, field: "status", before: b.status, after: a.status, message: `${q(a.name)} is retired` })),
  },
  {
    id: "ASSET_ADDED",
    purpose: "A new asset is declared.",
    severity: "safe",
    detect: (c) => [...c.after.values()].filter((a) => !c.before.has(a.name)).map((a) => ({ asset: a.name, after: a.uri, message: `${q(a.name)} is added` })),
  },
  {
    id: "ASSET_URI_CHANGED",
    purpose: "An asset's URI changed: readers outside this corpus that match on the URI lose it.",
    severity: "dangerous",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => b.uri !== a.uri)
        .map(([b, a]) => ({ asset: a.name, field: "uri", before: b.uri, after: a.uri, message: `the uri of ${q(a.name)} changed from ${q(b.uri)} to ${q(a.uri)}` })),
  },
  {
    id: "ASSET_GROUP_CHANGED",
    purpose: "An asset moved to another group (domain).",
    severity: "safe",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => b.group !== a.group)
        .map(([b, a]) => ({ asset: a.name, field: "group", before: b.group, after: a.group, message: `the group of ${q(a.name)} changed from ${q(b.group)} to ${q(a.group)}` })),
  },
  {
    id: "SCHEDULE_CHANGED",
    purpose: "The condition under which an asset's producer runs changed.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const before = b.producer ? c.dagsBefore.get(b.producer)?.schedule : undefined;
        const after = a.producer ? c.dagsAfter.get(a.producer)?.schedule : undefined;
        return before && after && !same(before, after) ? [{ asset: a.name, field: "schedule", before, after, message: `the schedule of the DAG ${q(a.producer!)}, which produces ${q(a.name)}, changed` }] : [];
      }),
  },
  {
    id: "UPSTREAMS_CHANGED",
    purpose: "The upstreams an asset's producer reads changed.",
    severity: "safe",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const names = (d: DagPlan | undefined): string[] => upstreamsOf(d).map((u) => u.asset).sort(compareStrings);
        const before = names(b.producer ? c.dagsBefore.get(b.producer) : undefined);
        const after = names(a.producer ? c.dagsAfter.get(a.producer) : undefined);
        if (!a.producer || !b.producer || same(before, after)) return [];
        const added = after.filter((x) => !before.includes(x));
        const removed = before.filter((x) => !after.includes(x));
        const words = [...(added.length ? [`reads ${added.map((x) => q(x)).join(", ")}`] : []), ...(removed.length ? [`no longer reads ${removed.map((x) => q(x)).join(", ")}`] : [])];
        return [{ asset: a.name, field: "upstreams", before, after, message: `the DAG ${q(a.producer)}, which produces ${q(a.name)}, ${words.join(" and ")}` }];
      }),
  },
  {
    id: "PROPERTY_REMOVED",
    purpose: "A property is removed from a dataset's schema; readers of that column break.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) =>
        [...propertiesOf(b).keys()].filter((p) => !propertiesOf(a).has(p)).map((p) => ({ asset: a.name, field: `schema.properties.${p}`, message: `the property ${q(p)} of ${q(a.name)} is removed` })),
      ),
  },
  {
    id: "PROPERTY_ADDED",
    purpose: "A property is added to a dataset's schema.",
    severity: "safe",
    detect: (c) =>
      kept(c).flatMap(([b, a]) =>
        [...propertiesOf(a).keys()].filter((p) => !propertiesOf(b).has(p)).map((p) => ({ asset: a.name, field: `schema.properties.${p}`, message: `the property ${q(p)} is added to ${q(a.name)}` })),
      ),
  },
  {
    id: "PROPERTY_TYPE_CHANGED",
    purpose: "A property's logical or physical type changed.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const after = propertiesOf(a);
        return [...propertiesOf(b)].flatMap(([name, p]) => {
          const n = after.get(name);
          if (!n) return [];
          return (["logicalType", "physicalType"] as const)
            .filter((k) => (p[k] ?? null) !== (n[k] ?? null))
            .map((k) => ({ asset: a.name, field: `schema.properties.${name}.${k}`, before: p[k] ?? null, after: n[k] ?? null, message: `the ${k} of ${q(`${a.name}.${name}`)} changed from ${q(p[k] ?? null)} to ${q(n[k] ?? null)}` }));
        });
      }),
  },
  {
    id: "PROPERTY_REQUIRED_TIGHTENED",
    purpose: "A property became required: existing rows or producers may now fail the contract.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const after = propertiesOf(a);
        return [...propertiesOf(b)]
          .filter(([name, p]) => after.has(name) && !p.required && after.get(name)!.required === true)
          .map(([name]) => ({ asset: a.name, field: `schema.properties.${name}.required`, before: false, after: true, message: `${q(`${a.name}.${name}`)} became required` }));
      }),
  },
  {
    id: "PROPERTY_REQUIRED_RELAXED",
    purpose: "A property is no longer required: consumers may now see nulls.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const after = propertiesOf(a);
        return [...propertiesOf(b)]
          .filter(([name, p]) => after.has(name) && p.required === true && !after.get(name)!.required)
          .map(([name]) => ({ asset: a.name, field: `schema.properties.${name}.required`, before: true, after: false, message: `${q(`${a.name}.${name}`)} is no longer required` }));
      }),
  },
  {
    id: "QUALITY_RULE_REMOVED",
    purpose: "A quality rule is removed: the gate lets through what it used to stop.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const after = qualityByName(a);
        return [...qualityByName(b).keys()].filter((n) => !after.has(n)).map((n) => ({ asset: a.name, field: `quality.${n}`, message: `the quality rule ${q(n)} of ${q(a.name)} is removed` }));
      }),
  },
  {
    id: "QUALITY_RULE_CHANGED",
    purpose: "A quality rule's metric, threshold or severity changed.",
    severity: "dangerous",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const after = qualityByName(a);
        return [...qualityByName(b)]
          .filter(([n, r]) => after.has(n) && !same(r, after.get(n)))
          .map(([n, r]) => ({ asset: a.name, field: `quality.${n}`, before: r, after: after.get(n), message: `the quality rule ${q(n)} of ${q(a.name)} changed` }));
      }),
  },
  {
    id: "QUALITY_RULE_ADDED",
    purpose: "A quality rule is added.",
    severity: "safe",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const before = qualityByName(b);
        return [...qualityByName(a).keys()].filter((n) => !before.has(n)).map((n) => ({ asset: a.name, field: `quality.${n}`, message: `the quality rule ${q(n)} is added to ${q(a.name)}` }));
      }),
  },
  {
    id: "FRESHNESS_CHANGED",
    purpose: "How old an asset may get before it is degraded or stale changed.",
    severity: "safe",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => !same(b.extra.freshness, a.extra.freshness))
        .map(([b, a]) => ({ asset: a.name, field: "freshness", before: b.extra.freshness ?? null, after: a.extra.freshness ?? null, message: `the freshness of ${q(a.name)} changed` })),
  },
  {
    id: "OWNER_CHANGED",
    purpose: "An asset's owning team changed.",
    severity: "safe",
    detect: (c) =>
      kept(c)
        .filter(([b, a]) => b.extra.owner !== a.extra.owner)
        .map(([b, a]) => ({ asset: a.name, field: "owner", before: b.extra.owner ?? null, after: a.extra.owner ?? null, message: `the owner of ${q(a.name)} changed from ${q(b.extra.owner ?? null)} to ${q(a.extra.owner ?? null)}` })),
  },
  {
    id: "EXTRA_CHANGED",
    purpose: "An asset's extra changed beyond owner and freshness (versions, layer, own keys).",
    severity: "safe",
    detect: (c) =>
      kept(c).flatMap(([b, a]) => {
        const before = extraWithout(b.extra, ["owner", "freshness"]);
        const after = extraWithout(a.extra, ["owner", "freshness"]);
        if (same(before, after)) return [];
        const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !same(before[k], after[k])).sort(compareStrings);
        return [{ asset: a.name, field: "extra", before, after, message: `the extra of ${q(a.name)} changed (${keys.map((k) => q(k)).join(", ")})` }];
      }),
  },
];
