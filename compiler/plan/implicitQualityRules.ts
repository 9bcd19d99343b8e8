/** What the implicit rules read of a dataset: its properties' flags and its authored rules (a contract's dataset, or a manifest asset). */
export interface ConstrainedDataset {
  schema: { properties: ReadonlyArray<{ name: string; required?: boolean; primaryKey?: boolean; unique?: boolean }> };
  quality?: ReadonlyArray<{ metric?: string; column?: string; severity?: string; mustBe?: number }>;
}

/** The property flag a rule enforces. */
export type ImpliedBy = "required" | "unique" | "primaryKey";

/** A quality rule the compiler derives from a declared constraint, as the manifest carries it. */
export interface ImplicitQualityRule {
  name: string;
  description: string;
  metric: "nullValues" | "duplicateValues";
  column?: string;
  /** ODCS schema-level arguments: the key's properties, in declaration order (composite keys). */
  arguments?: { properties: string[] };
  mustBe: 0;
  severity: "error";
  implied_by: ImpliedBy;
}

/**
 * The implicit `error` quality rules of a dataset's declared key constraints (ODCS v3 schema
 * properties): `required` and every `primaryKey` member get `nullValues` = 0 (ODCS: "may not
 * contain null values"); `unique` and a one-property `primaryKey` get `duplicateValues` = 0 on the
 * column; a composite key gets `duplicateValues` = 0 on the tuple (`arguments.properties`), since
 * its members repeat on their own by design. Names are `<column>_required`, `<column>_unique`,
 * `primary_key_unique`.
 *
 * A rule is left out when the author already enforces the same thing: an `error` rule with the
 * same metric and column and `mustBe: 0`. Rows where a key member is NULL are left to the
 * `required` rule, as SQL UNIQUE does, so a NULL is never counted twice.
 *
 * Since manifestVersion 2 these rules are not stored: every reader derives them from the
 * manifest's `assets[].schema` and `assets[].quality` (`runtimeQuality` in `plan/planDags.ts`; the
 * runtime's `contract_runtime.quality_rules.implicit_quality_rules`, held equal to this function
 * by `test/python/test_quality_rules.py`).
 *
 * @returns The rules in property order (all `required` rules first, then uniqueness), stable for
 *   the same contract.
 */
export function implicitQualityRules(dataset: ConstrainedDataset): ImplicitQualityRule[] {
  const properties = dataset.schema.properties;
  const authored = dataset.quality ?? [];
  const covered = (metric: ImplicitQualityRule["metric"], column: string): boolean =>
    authored.some((q) => q.metric === metric && q.column === column && (q.severity ?? "error") === "error" && q.mustBe === 0);
  const keys = properties.filter((p) => p.primaryKey === true).map((p) => p.name);
  const rules: ImplicitQualityRule[] = [];
  for (const p of properties) {
    if (p.required !== true && p.primaryKey !== true) continue;
    if (covered("nullValues", p.name)) continue;
    const by: ImpliedBy = p.required === true ? "required" : "primaryKey";
    rules.push({
      name: `${p.name}_required`,
      description: `implied by ${by}: true on ${p.name}: no NULL values`,
      metric: "nullValues",
      column: p.name,
      mustBe: 0,
      severity: "error",
      implied_by: by,
    });
  }
  for (const p of properties) {
    const soleKey = p.primaryKey === true && keys.length === 1;
    if (p.unique !== true && !soleKey) continue;
    if (covered("duplicateValues", p.name)) continue;
    const by: ImpliedBy = p.unique === true ? "unique" : "primaryKey";
    rules.push({
      name: `${p.name}_unique`,
      description: `implied by ${by}: true on ${p.name}: no repeated non-NULL value`,
      metric: "duplicateValues",
      column: p.name,
      mustBe: 0,
      severity: "error",
      implied_by: by,
    });
  }
  if (keys.length > 1) {
    rules.push({
      name: "primary_key_unique",
      description: `implied by primaryKey: true on ${keys.join(", ")}: no repeated key among rows without a NULL member`,
      metric: "duplicateValues",
      arguments: { properties: keys },
      mustBe: 0,
      severity: "error",
      implied_by: "primaryKey",
    });
  }
  return rules;
}
