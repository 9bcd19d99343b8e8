import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject } from "../../compiler/pipeline.js";
import { REPO } from "./helpers.js";

/** A project of the given contract files on the golden cases' orchestration config. */
function project(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-unread-"));
  fs.cpSync(path.join(REPO, "test", "cases", "_base"), root, { recursive: true });
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const externals = `apiVersion: contract-assets/v1
kind: ExternalAssets
domain: shop
owner: team-shop
assets:
  - {name: shop.read_by_draft, uri: "x-datalake://external/shop/a"}
  - {name: shop.read_by_retired, uri: "x-datalake://external/shop/b"}
  - {name: shop.read_by_ingestion, uri: "s3://shop-feeds/orders/"}
`;

const reader = (id: string, status: string, upstream: string): string => `apiVersion: contract-assets/v1
kind: TransformContract
id: shop.${id}
version: 1.0.0
status: ${status}
domain: shop
owner: team-shop
producer: {type: python, entrypoint: shop_jobs.x:run}
upstreams: [{asset: ${upstream}}]
datasets:
  - name: ${id}
    schema: {version: 1, properties: [{name: id, logicalType: string}]}
`;

const ingestion = `apiVersion: contract-assets/v1
kind: IngestionContract
id: shop.orders_raw
version: 1.0.0
domain: shop
owner: team-shop
source: {name: shop.read_by_ingestion, uri: "s3://shop-feeds/orders/", system: shop, format: csv}
mode: load
trigger: {cron: "0 3 * * *"}
datasets:
  - name: orders_raw
    schema: {version: 1, properties: [{name: id, logicalType: string}]}
`;

const unread = (root: string): string[] =>
  compileProject(defaultLayout(root))
    .diagnostics.filter((d) => d.code === "CA4801")
    .map((d) => d.message.match(/"([^"]+)"/)![1]!);

describe("CA4801: an external asset no contract reads", () => {
  it("counts a draft reader and an ingestion source, not a retired reader", () => {
    const root = project({
      "contracts/shop/externals.yaml": externals,
      "contracts/shop/drafted.yaml": reader("drafted", "draft", "shop.read_by_draft"),
      "contracts/shop/gone.yaml": reader("gone", "retired", "shop.read_by_retired"),
      "contracts/shop/orders_raw.yaml": ingestion,
    });
    expect(unread(root)).toEqual(["shop.read_by_retired"]);
  });

  it("says nothing while a contract document fails validation (its upstreams are unknown)", () => {
    const root = project({
      "contracts/shop/externals.yaml": externals,
      "contracts/shop/broken.yaml": reader("broken", "active", "shop.read_by_draft").replace("owner: team-shop\n", ""),
    });
    const result = compileProject(defaultLayout(root));
    expect(result.diagnostics.some((d) => d.code === "CA3003")).toBe(true);
    expect(unread(root)).toEqual([]);
  });

  it("says nothing while a contract file fails to parse (what it reads is unknown)", () => {
    const root = project({
      "contracts/shop/externals.yaml": externals,
      "contracts/shop/broken.yaml": reader("broken", "active", "shop.read_by_draft").replace("domain: shop\n", "domain: shop\n\towner: x\n"),
    });
    const result = compileProject(defaultLayout(root));
    expect(result.diagnostics.some((d) => d.code === "CA2001")).toBe(true);
    expect(unread(root)).toEqual([]);
  });
});
