import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * A `dbt` producer agrees with its dbt project's committed manifest: each dataset is a selected
 * model and each selected model a dataset, the columns a model declares are the dataset's
 * properties, and a model reads only what the contract lists as upstreams. Why: business
 * dependencies come from contracts (they schedule the DAG and name its inlets); a `ref` or
 * `source` the contract does not declare would be a hidden dependency, and a column mismatch a
 * task that fails at run time (ADR 0012). Reported at the contract's line, naming the dbt file.
 */
export const ConsistentDbtProjectRule: LinkRule = {
  name: "ConsistentDbtProjectRule",
  check(state, context) {
    for (const c of state.contracts) {
      // Resolved once by link (`resolveDbtProducers`): only dbt producers have one.
      const resolved = c.dbt;
      if (!resolved) continue;
      for (const f of resolved.findings) {
        const entry = f.entry as (typeof Diagnostics)["DbtManifestMissing"];
        const args = f.args as Parameters<(typeof Diagnostics)["DbtManifestMissing"]["message"]>[0];
        context.report(createDiagnostic(entry, args, c.located.source.locate(f.path), f.hint === undefined ? {} : { hint: f.hint }));
      }
    }
  },
};
