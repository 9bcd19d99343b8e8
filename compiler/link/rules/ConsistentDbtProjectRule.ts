import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { dbtManifestPath, dbtPublishers, resolveDbtProducer } from "../dbtProject.js";
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
    const publishers = dbtPublishers(state.contracts, state.context.producerFiles);
    for (const c of state.contracts) {
      const contract = c.contract;
      if (contract.kind !== "TransformContract" || contract.producer.type !== "dbt") continue;
      const project = contract.producer.project;
      const resolved = resolveDbtProducer(c, state.context.producerFiles.get(dbtManifestPath(project)), publishers.get(project) ?? new Map());
      for (const f of resolved.findings) {
        const entry = f.entry as (typeof Diagnostics)["DbtManifestMissing"];
        const args = f.args as Parameters<(typeof Diagnostics)["DbtManifestMissing"]["message"]>[0];
        context.report(createDiagnostic(entry, args, c.located.source.locate(f.path), f.hint === undefined ? {} : { hint: f.hint }));
      }
    }
  },
};
