import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * The transform producer types `contract_runtime` implements (`contract_runtime.producers`), in
 * the manifest schema's `DagRuntime` union; `test/python/test_manifest_schema.py` pins them equal.
 */
export const RUNTIME_PRODUCER_TYPES: readonly string[] = ["command", "dbt", "python", "sql"];

/**
 * A transform's producer type is one the runtime implements. Why: a producer type the contract
 * schema knows but `contract_runtime` does not would compile and then fail every run; a field the
 * compiler accepts must run. (Every type the schema knows is implemented since the dbt producer,
 * ADR 0012; the rule stays for the next one.)
 */
export const ImplementedProducerRule: DocumentRule = {
  name: "ImplementedProducerRule",
  check(document, context) {
    if (document.kind !== "TransformContract" || RUNTIME_PRODUCER_TYPES.includes(document.producer.type)) return;
    context.report(
      createDiagnostic(
        Diagnostics.UnimplementedProducer,
        { type: document.producer.type, implemented: RUNTIME_PRODUCER_TYPES.map((t) => JSON.stringify(t)).join(", ") },
        context.source.locate(["producer", "type"]),
      ),
    );
  },
};
