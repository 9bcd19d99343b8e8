import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../compiler/cli.js";
import { isQueryCredential, maskSecrets } from "../../compiler/support/secrets.js";
import { queryCredential } from "../../compiler/support/uri.js";
import { REPO, temporaryRoots } from "./helpers.js";

const { root: tempRoot } = temporaryRoots("ca-query-credential-");

/** The secret of every project below: no output and no file but the input may hold it. */
const SECRET = "c2VjcmV0LW5vdC1yZWFs";
const SAS = `https://acct.blob.core.windows.net/exports/orders?sv=2022-11-02&sp=r&sig=${SECRET}`;

const CONFIG = fs.readFileSync(path.join(REPO, "test/cases/_base/orchestration/airflow/sources/config.yaml"), "utf8");
const HEAD = "apiVersion: contract-assets/v1\nversion: 1.0.0\nstatus: active\ndomain: sales\nowner: team-sales-data\n";
const DATASET = "    schema: {version: 1, properties: [{name: order_id, logicalType: string, required: true}]}\n";
const TRANSFORM = (dataset: string, extra = ""): string =>
  `${HEAD}kind: TransformContract\nid: sales.orders_clean\n${extra}producer: {type: sql, path: sql/orders_clean.sql}\n` +
  `trigger: {cron: "0 3 * * *", timezone: UTC}\ndatasets:\n  - name: orders_clean\n${dataset}${DATASET}`;

/** Each place a URI comes from, with the secret in its query string, and the code it gets. */
const ORIGINS: Record<string, { files: Record<string, string>; code: string }> = {
  "dataset uri": { files: { "contracts/sales/orders_clean.yaml": TRANSFORM(`    uri: "${SAS}"\n`) }, code: "CA3049" },
  "ingestion source.uri": {
    files: {
      "contracts/sales/orders_raw.yaml":
        `${HEAD}kind: IngestionContract\nid: sales.orders_raw\nmode: load\n` +
        `source: {name: shop.orders_export, uri: "https://shop.s3.amazonaws.com/o.csv?X-Amz-Expires=60&X-Amz-Signature=${SECRET}", system: shop, format: csv}\n` +
        `trigger: {schedule_ref: nightly}\ndatasets:\n  - name: orders_raw\n${DATASET}`,
    },
    code: "CA3049",
  },
  "ExternalAssets entry": {
    files: {
      "contracts/sales/external.yaml":
        `apiVersion: contract-assets/v1\nkind: ExternalAssets\ndomain: sales\nowner: team-sales-data\n` +
        `assets:\n  - {name: sales.feed, uri: "https://storage.googleapis.com/b/feed.csv?X-Goog-Signature=${SECRET}"}\n`,
    },
    code: "CA3049",
  },
  "ODCS assetUri": {
    files: {
      "contracts/sales/orders_clean.odcs.yaml":
        "apiVersion: v3.1.0\nkind: DataContract\nid: sales.orders_clean\nversion: 1.0.0\nstatus: active\ndomain: sales\n" +
        "team: {name: team-sales-data}\nschema:\n  - name: orders_clean\n    properties:\n      - {name: order_id, logicalType: string}\n" +
        `    customProperties:\n      - {property: schemaVersion, value: 1}\n      - {property: assetUri, value: "${SAS}"}\n` +
        "customProperties:\n  - {property: producer, value: {type: sql, path: sql/orders_clean.sql}}\n" +
        '  - {property: trigger, value: {cron: "0 3 * * *", timezone: UTC}}\n',
    },
    code: "CA3049",
  },
  "config uri_template": {
    files: {
      "orchestration/airflow/sources/config.yaml": CONFIG.replace(/^uri_template: .*$/m, `uri_template: "https://lake.example.com/{layer}/{domain}/{name}?token=${SECRET}"`),
      "contracts/sales/orders_clean.yaml": TRANSFORM(""),
    },
    code: "CA3045",
  },
  "description": { files: { "contracts/sales/orders_clean.yaml": TRANSFORM("", `description: "A copy of ${SAS}"\n`) }, code: "CA3045" },
  "landing.uri": {
    files: {
      "contracts/sales/orders_extract.yaml":
        `${HEAD}kind: IngestionContract\nid: sales.orders_extract\nmode: extract\n` +
        "source: {name: shop.orders_db, uri: \"postgres://db:5432/shop/public/orders\", system: shop, format: parquet, table: public.orders}\n" +
        `landing: {uri: "https://lake.example.com/landing/?access_token=${SECRET}"}\n` +
        `trigger: {schedule_ref: nightly}\ndatasets:\n  - name: orders_extract\n${DATASET}`,
    },
    code: "CA3045",
  },
};

/** Every file under `dir` whose bytes hold `text`, as paths relative to `dir`. */
function filesHolding(dir: string, text: string): string[] {
  const found: string[] = [];
  const walk = (at: string): void => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && fs.readFileSync(full).includes(text)) found.push(path.relative(dir, full));
    }
  };
  walk(dir);
  // Sort for determinism
  return found.sort();
}

describe("a credential in a URI's query string (CA3049, CA3045)", () => {
  for (const [origin, { files, code }] of Object.entries(ORIGINS)) {
    it(`is refused in the ${origin}, masked in every output, and written nowhere`, async () => {
      const root = tempRoot();
      const all: Record<string, string> = { "orchestration/airflow/sources/config.yaml": CONFIG, "sql/orders_clean.sql": "select 'o' as order_id\n", ...files };
      for (const [file, text] of Object.entries(all)) {
        fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        fs.writeFileSync(path.join(root, file), text);
      }
      const inputs = Object.keys(files).filter((f) => files[f]!.includes(SECRET));
      for (const command of [["compile"], ["compile", "--format", "json"], ["validate", "--format", "json"], ["validate", "--format", "github"], ["export", "odcs", "--out", "exported"], ["diff", "--format", "json"]]) {
        const run = await runCli([...command, "--root", root]);
        const shown = command.join(" ");
        expect(run.exitCode, `${shown}: ${run.stdout}${run.stderr}`).toBe(1);
        expect(`${run.stdout}${run.stderr}`, shown).toContain(code);
        // The text formats show the source line, masked.
        if (command.length === 1) expect(run.stderr, shown).toContain("=***");
        expect(`${run.stdout}${run.stderr}`, shown).not.toContain(SECRET);
      }
      expect(filesHolding(root, SECRET)).toEqual(inputs.sort());
      expect(fs.existsSync(path.join(root, "generated"))).toBe(false);
      expect(fs.existsSync(path.join(root, "exported"))).toBe(false);
    });
  }

  it("knows the credential parameters of signed URLs and tokens, in any case, and nothing else", () => {
    const credentials = [
      "sig", "SIG", "Signature", "X-Amz-Signature", "x-amz-credential", "X-Amz-Security-Token", "AWSAccessKeyId",
      "X-Goog-Signature", "X-Goog-Credential", "GoogleAccessId", "X%2DAmz%2DSignature", "token", "access_token",
      "refresh_token", "password", "passwd", "pwd", "client_secret", "secret", "api_key", "apikey", "x-api-key",
    ];
    for (const name of credentials) expect(isQueryCredential(name, "v"), name).toBe(true);
    const plain = ["sv", "se", "sp", "spr", "X-Amz-Expires", "X-Amz-Date", "X-Amz-Algorithm", "X-Amz-SignedHeaders", "X-Goog-Date", "prefix", "format", "page", "key", "monkey"];
    for (const name of plain) expect(isQueryCredential(name, "v"), name).toBe(false);
    // A blank value carries nothing; a plain `key` only with a Google API key's shape.
    expect(isQueryCredential("sig", "")).toBe(false);
    expect(isQueryCredential("key", `AIza${"x".repeat(35)}`)).toBe(true);
    expect(queryCredential(`https://h/a?key=AIza${"Q".repeat(35)}`)).toBe("key");
    expect(queryCredential("https://h/a?key=orders&format=csv")).toBeUndefined();
    expect(queryCredential("https://h/a#frag?sig=x")).toBeUndefined();
    expect(queryCredential("s3://b/k?a=1&X-Amz-Signature=x")).toBe("X-Amz-Signature");
  });

  it("masks the values, and only them, in text, YAML and JSON", () => {
    expect(maskSecrets(SAS)).toBe("https://acct.blob.core.windows.net/exports/orders?sv=2022-11-02&sp=r&sig=***");
    expect(maskSecrets(`  uri: '${SAS}'`)).toBe("  uri: 'https://acct.blob.core.windows.net/exports/orders?sv=2022-11-02&sp=r&sig=***'");
    expect(maskSecrets(JSON.stringify({ message: `the uri "${SAS}" is refused` }))).toBe(
      JSON.stringify({ message: 'the uri "https://acct.blob.core.windows.net/exports/orders?sv=2022-11-02&sp=r&sig=***" is refused' }),
    );
    expect(maskSecrets("{uri: https://h/x?token=abc, system: s}")).toBe("{uri: https://h/x?token=***, system: s}");
    expect(maskSecrets("s3://u:p@b/x?X-Amz-Signature=abc&X-Amz-Expires=60")).toBe("s3://***@b/x?X-Amz-Signature=***&X-Amz-Expires=60");
    expect(maskSecrets("https://h/x?key=orders&page=2")).toBe("https://h/x?key=orders&page=2");
  });
});
