import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { parseDurationSeconds } from "../../support/duration.js";
import type { NodePath } from "../../parse/parseDocument.js";
import type { DocumentRule, RuleContext } from "./rule.js";

function check(value: string | undefined, path: NodePath, context: RuleContext): number | undefined {
  if (value === undefined) return undefined;
  const seconds = parseDurationSeconds(value);
  if (seconds === undefined) context.report(createDiagnostic(Diagnostics.InvalidDuration, { value }, context.source.locate(path)));
  return seconds;
}

/** `max_age` and `degrade_after` are durations, and the escalation never comes before the promise. */
function checkFreshness(freshness: { max_age: string; degrade_after?: string }, path: NodePath, context: RuleContext): void {
  const maxAge = check(freshness.max_age, [...path, "max_age"], context);
  const degrade = check(freshness.degrade_after, [...path, "degrade_after"], context);
  if (maxAge !== undefined && degrade !== undefined && degrade < maxAge) {
    context.report(
      createDiagnostic(
        Diagnostics.DegradeBeforeMaxAge,
        { maxAge: freshness.max_age, degradeAfter: freshness.degrade_after! },
        context.source.locate([...path, "degrade_after"]),
      ),
    );
  }
}

/**
 * Every duration is an ISO-8601 duration of fixed length (weeks, days, hours, minutes, seconds),
 * and a freshness `degrade_after` is not shorter than `max_age`. Why: durations become Python
 * timedeltas and freshness deadlines that must mean one exact span, and a `degraded` state reached
 * before `stale` would escalate a dataset that has not yet broken its promise.
 */
export const ValidDurationRule: DocumentRule = {
  name: "ValidDurationRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig") {
      const settings = [
        ...(document.defaults ? [{ s: document.defaults, path: ["defaults"] as Array<string | number> }] : []),
        ...(document.overrides ?? []).map((s, i) => ({ s, path: ["overrides", i] as Array<string | number> })),
      ];
      for (const { s, path } of settings) {
        check(s.retry_delay, [...path, "retry_delay"], context);
        check(s.execution_timeout, [...path, "execution_timeout"], context);
      }
      return;
    }
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((asset, i) => {
        if (asset.freshness) checkFreshness(asset.freshness, ["assets", i, "freshness"], context);
      });
      return;
    }
    if (!document.freshness) return;
    checkFreshness(document.freshness, ["freshness"], context);
    check(document.freshness.expected_runtime, ["freshness", "expected_runtime"], context);
  },
};
