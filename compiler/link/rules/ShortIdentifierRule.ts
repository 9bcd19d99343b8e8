import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { RelatedLocation, SourceLocation } from "../../diagnostics/diagnostic.js";
import type { WarehouseDialect } from "../../model/contract.js";
import type { LinkRule } from "./rule.js";

/**
 * The identifier limit of each warehouse the config can name (`warehouse.dialect`), in bytes;
 * none for a warehouse that keeps identifiers whole. PostgreSQL: NAMEDATALEN - 1 = 63 bytes
 * (identifiers longer are truncated, with a NOTICE only: "Lexical Structure", PostgreSQL docs).
 */
export const IDENTIFIER_LIMITS: Readonly<Record<WarehouseDialect, { warehouse: string; bytes: number } | undefined>> = {
  postgres: { warehouse: "PostgreSQL", bytes: 63 },
  duckdb: undefined,
};

/** `name` as a warehouse keeping `limit` bytes stores it: cut at a character boundary (PostgreSQL's `pg_mbcliplen`). */
export function truncateIdentifier(name: string, limit: number): string {
  const bytes = Buffer.from(name, "utf8");
  if (bytes.length <= limit) return name;
  let end = limit;
  // A UTF-8 continuation byte (10xxxxxx) at the cut: back off to the start of its character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * With a `warehouse.dialect` that has an identifier limit (PostgreSQL: 63 bytes), every identifier
 * the runtime creates for a dataset fits in it, and no two become one when truncated. Those
 * identifiers (`contract_runtime/tables.py`): the schema, the contract's domain; the table, the
 * dataset's name (also in a dbt producer's staging schema); the columns, its properties' names.
 * The staging and quarantine tables and dbt staging schemas are the runtime's own names, already
 * cut to the limit with a digest of the whole name, so the longest identifiers are these three.
 * Why: PostgreSQL truncates a longer name without an error, so two long table names would be one
 * table that two contracts overwrite, and two long column names fail the run's DDL.
 */
export const ShortIdentifierRule: LinkRule = {
  name: "ShortIdentifierRule",
  check(state, context) {
    const warehouse = state.config.warehouse;
    const limit = warehouse && IDENTIFIER_LIMITS[warehouse.dialect];
    if (!warehouse || !limit) return;
    const setHere: RelatedLocation = { message: `the warehouse is ${limit.warehouse} (warehouse.dialect)`, location: warehouse.location };
    const tooLong = (kind: string, identifier: string, location: () => SourceLocation): void => {
      const bytes = Buffer.byteLength(identifier, "utf8");
      if (bytes <= limit.bytes) return;
      const truncated = truncateIdentifier(identifier, limit.bytes);
      context.report(
        createDiagnostic(Diagnostics.IdentifierTooLong, { kind, identifier, bytes, warehouse: limit.warehouse, limit: limit.bytes, truncated }, location(), {
          related: [setHere],
          hint: kind === "schema" ? `a contract's domain is the schema of its tables; shorten it to at most ${limit.bytes} bytes` : `shorten it to at most ${limit.bytes} bytes`,
        }),
      );
    };
    // The first declaration of each truncated identifier, to point a clash at.
    type Seen = { identifier: string; location: () => SourceLocation };
    const clash = (seen: Map<string, Seen>, key: string, kind: string, identifier: string, location: () => SourceLocation): void => {
      const first = seen.get(key);
      if (!first) {
        seen.set(key, { identifier, location });
        return;
      }
      if (first.identifier === identifier) return;
      context.report(
        createDiagnostic(
          Diagnostics.TruncatedIdentifierClash,
          { kind, identifier, other: first.identifier, warehouse: limit.warehouse, truncated: key },
          location(),
          { related: [{ message: `${JSON.stringify(first.identifier)} is declared here`, location: first.location() }] },
        ),
      );
    };
    const cut = (name: string): string => truncateIdentifier(name, limit.bytes);
    const schemas = new Map<string, Seen>();
    const tables = new Map<string, Seen>();
    for (const located of state.table.contracts) {
      const c = located.document;
      const source = located.source;
      const domainLocation = (): SourceLocation => source.locate(["domain"]);
      tooLong("schema", c.domain, domainLocation);
      clash(schemas, cut(c.domain), "schema", c.domain, domainLocation);
      c.datasets.forEach((dataset, i) => {
        const asset = state.table.assets.get(`${c.domain}.${dataset.name}`);
        // A refused dataset (its name or URI clashed) is reported already.
        if (!asset || asset.external || asset.producer !== c.id) return;
        const at = (...path: Array<string | number>) => (): SourceLocation => source.locate(["datasets", i, ...path]);
        tooLong("table", dataset.name, at("name"));
        // Two schemas that truncation makes one are reported as such, and each pair of their tables that it makes one too.
        clash(tables, `${cut(c.domain)}.${cut(dataset.name)}`, "table", `${c.domain}.${dataset.name}`, at("name"));
        const columns = new Map<string, Seen>();
        dataset.schema.properties.forEach((property, j) => {
          tooLong("column", property.name, at("schema", "properties", j, "name"));
          clash(columns, cut(property.name), "column", property.name, at("schema", "properties", j, "name"));
        });
      });
    }
  },
};
