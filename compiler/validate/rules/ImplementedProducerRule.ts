import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * The transform producer types `contract_runtime` implements (`contract_runtime.producers`), in
 * the manifest schema's `DagRuntime` union; `test/python/test_manifest_schema.py` pins them equal.
 */
export const RUNTIME_PRODUCER_TYPES: readonly string[] = ["command", "python", "sql"];

/**
 * A transform's producer type is one the runtime implements. Why: the contract schema knows
 * `dbt`, but `contract_runtime` has no dbt producer yet, so such a contract would compile and
 * then fail every run; a field the compiler accepts must run.
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
