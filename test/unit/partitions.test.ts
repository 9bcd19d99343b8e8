import { describe, expect, it } from "vitest";
import { sourceAssetUri } from "../../compiler/support/partitions.js";
import { REPO } from "./helpers.js";
import fs from "node:fs";
import path from "node:path";

// The Asset of a partitioned ingestion's source (issue 35): one Asset for every key's objects.
describe("sourceAssetUri", () => {
  it("is the folder {partition} stands in, without the trailing slash Airflow strips", () => {
    expect(sourceAssetUri("s3://acme-web-exports/page_views/{partition}.csv")).toBe("s3://acme-web-exports/page_views");
    expect(sourceAssetUri("s3://exports/events/dt={partition}/part-0.parquet")).toBe("s3://exports/events");
    expect(sourceAssetUri("gs://b/a/{partition}/{partition}.jsonl")).toBe("gs://b/a");
  });

  it("leaves a location without the placeholder as it is", () => {
    expect(sourceAssetUri("s3://acme-billing-exports/payments")).toBe("s3://acme-billing-exports/payments");
  });

  it("names the bundled partitioned source by its prefix, and its DAG reads the key's objects", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO, "generated", "manifest.json"), "utf8"));
    const source = manifest.assets.find((a: { name: string }) => a.name === "web_platform.page_views_export");
    expect(source.uri).toBe("s3://acme-web-exports/page_views");
    const dag = manifest.dags.find((d: { dag_id: string }) => d.dag_id === "web.page_views_raw");
    expect(dag.runtime.source.uri).toBe("s3://acme-web-exports/page_views/{partition}.csv");
  });
});
