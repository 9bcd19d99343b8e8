import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { NodePath, ParsedDocument } from "../parse/parseDocument.js";
import { didYouMean, suggest } from "../support/suggest.js";
import type { ErrorObject } from "./schemas.js";

/** `/datasets/0/name` → `["datasets", 0, "name"]` (JSON Pointer unescaping). */
export function pointerToPath(pointer: string): Array<string | number> {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s));
}

/** A path for people: `datasets[0].schema.properties[2]`, or "the document" for the root. */
export function describePath(path: NodePath): string {
  if (path.length === 0) return "the document";
  let out = "";
  for (const segment of path) out += typeof segment === "number" ? `[${segment}]` : out ? `.${segment}` : segment;
  return out;
}

/** What a JSON value is, in words, for "found …" in messages. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 60 ? value.slice(0, 57) + "..." : value)}`;
  return `the ${typeof value} ${String(value)}`;
}

function rawText(doc: ParsedDocument, path: NodePath): string | undefined {
  const location = doc.locate(path);
  if (location.endLine !== location.line || location.endColumn === undefined) return undefined;
  const line = doc.file.text.split(/\r?\n/)[location.line - 1];
  return line?.slice(location.column - 1, location.endColumn - 1);
}

/**
 * A hint for the YAML 1.1 habits the 1.2 core schema reads differently: `1.10` is the number 1.1,
 * `yes`/`on` stay strings, `2024-05-01` stays a string.
 */
function yaml11Hint(doc: ParsedDocument, path: NodePath, value: unknown, expected: string): string | undefined {
  const raw = rawText(doc, path);
  if (expected === "string" && (typeof value === "number" || typeof value === "boolean")) {
    return `quote it: "${raw ?? String(value)}" (YAML 1.2 reads it unquoted as ${typeof value === "number" ? "the number" : "the boolean"} ${String(value)})`;
  }
  if (expected === "boolean" && typeof value === "string" && /^(yes|no|on|off|y|n)$/i.test(value)) {
    return `write true or false; YAML 1.2 reads "${value}" as a string, not a boolean`;
  }
  if ((expected === "integer" || expected === "number") && typeof value === "string" && /^[+-]?\d/.test(value)) {
    return `remove the quotes to make it a number`;
  }
  return undefined;
}

/** Maps ajv's errors for one document to located diagnostics (CA3001–CA3006). */
export function mapSchemaErrors(doc: ParsedDocument, errors: readonly ErrorObject[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  // A missing field that an unknown sibling most likely misspells is said once, as the did-you-mean.
  const misspelt = new Set<string>();
  for (const error of errors) {
    if (error.keyword !== "additionalProperties") continue;
    const known = Object.keys(((error.parentSchema as Record<string, unknown> | undefined)?.properties as object | undefined) ?? {});
    const guess = suggest((error.params as { additionalProperty: string }).additionalProperty, known);
    if (guess) misspelt.add(`${error.instancePath}/${guess}`);
  }
  const describe = doc.describe ?? describePath;
  for (const error of errors) {
    const path = pointerToPath(error.instancePath);
    const field = describe(path);
    const parentSchema = error.parentSchema as Record<string, unknown> | undefined;
    switch (error.keyword) {
      case "if":
        // The branch that failed reports its own errors.
        break;
      case "additionalProperties": {
        const extra = (error.params as { additionalProperty: string }).additionalProperty;
        const known = Object.keys((parentSchema?.properties as object | undefined) ?? {});
        // A trigger tree's `and:`/`or:` get `all`/`any` by meaning, not by spelling.
        const guess = didYouMean(extra, known);
        out.push(
          createDiagnostic(Diagnostics.UnknownField, { field: extra, where: field }, doc.locate([...path, extra], "key"), {
            ...(guess ? { hint: guess } : known.length ? { hint: `known fields: ${known.join(", ")}` } : {}),
          }),
        );
        break;
      }
      case "required": {
        const missing = (error.params as { missingProperty: string }).missingProperty;
        if (misspelt.has(`${error.instancePath}/${missing}`)) break;
        out.push(createDiagnostic(Diagnostics.MissingField, { field: missing, where: field }, doc.locate(path)));
        break;
      }
      case "type": {
        const expected = String((error.params as { type: string | string[] }).type);
        const hint = yaml11Hint(doc, path, error.data, expected);
        const words: Record<string, string> = {
          string: "a string",
          integer: "an integer",
          number: "a number",
          boolean: "true or false",
          object: "a mapping",
          array: "a list",
        };
        out.push(
          createDiagnostic(
            Diagnostics.WrongType,
            { field, expected: words[expected] ?? expected, found: describeValue(error.data) },
            doc.locate(path),
            hint ? { hint } : {},
          ),
        );
        break;
      }
      case "enum":
      case "const": {
        const allowed =
          error.keyword === "enum"
            ? (error.params as { allowedValues: unknown[] }).allowedValues
            : [(error.params as { allowedValue: unknown }).allowedValue];
        const guess = typeof error.data === "string" ? didYouMean(error.data, allowed.map(String)) : undefined;
        const hint = guess ?? yaml11Hint(doc, path, error.data, typeof allowed[0]);
        out.push(
          createDiagnostic(
            Diagnostics.BadEnum,
            { field, value: describeValue(error.data), allowed: allowed.map((v) => JSON.stringify(v)).join(", ") },
            doc.locate(path),
            hint ? { hint } : {},
          ),
        );
        break;
      }
      case "discriminator": {
        const allowed = ["python", "sql", "dbt", "command"];
        const tagged = [...path, "type"];
        const value = (error.data as Record<string, unknown> | null)?.type;
        const guess = typeof value === "string" ? suggest(value, allowed) : undefined;
        if (value === undefined) {
          out.push(createDiagnostic(Diagnostics.MissingField, { field: "type", where: field }, doc.locate(path)));
        } else {
          out.push(
            createDiagnostic(
              Diagnostics.BadEnum,
              { field: describe(tagged), value: describeValue(value), allowed: allowed.map((v) => JSON.stringify(v)).join(", ") },
              doc.locate(tagged),
              guess ? { hint: `did you mean "${guess}"?` } : {},
            ),
          );
        }
        break;
      }
      case "pattern": {
        const expected = (parentSchema?.["x-expected"] as string | undefined) ?? `matching ${(error.params as { pattern: string }).pattern}`;
        out.push(createDiagnostic(Diagnostics.BadFormat, { field, value: describeValue(error.data), expected }, doc.locate(path)));
        break;
      }
      case "propertyNames":
        // The name itself is reported by the nested pattern error.
        break;
      case "maxLength":
      case "minLength":
      case "maxItems":
      case "minItems":
      case "maxProperties":
      case "minProperties":
      case "maximum":
      case "minimum": {
        const limit = (error.params as { limit: number }).limit;
        const words: Record<string, string> = {
          maxLength: `must be at most ${limit} characters long`,
          minLength: limit === 1 ? "must not be empty" : `must be at least ${limit} characters long`,
          maxItems: `must list at most ${limit} item${limit === 1 ? "" : "s"}`,
          minItems: limit === 1 ? "must list at least one item" : `must list at least ${limit} items`,
          maxProperties: limit === 1 ? "must have exactly one key" : `must have at most ${limit} keys`,
          minProperties: limit === 1 ? "must have a key" : `must have at least ${limit} keys`,
          maximum: `must be at most ${limit}`,
          minimum: `must be at least ${limit}`,
        };
        out.push(createDiagnostic(Diagnostics.SchemaViolation, { field, detail: `${words[error.keyword]}, found ${describeValue(error.data)}` }, doc.locate(path)));
        break;
      }
      default: {
        const propertyName = (error.params as { propertyName?: string }).propertyName;
        const at = propertyName !== undefined ? [...path, propertyName] : path;
        out.push(
          createDiagnostic(Diagnostics.SchemaViolation, { field: describe(at), detail: error.message ?? error.keyword }, doc.locate(at, propertyName !== undefined ? "key" : "value")),
        );
      }
    }
  }
  return out;
}
