import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import type { Manifest, ManifestAsset } from "../../compiler/manifest/buildManifest.js";
import type { DagPlan } from "../../compiler/plan/planDags.js";
import { compileProject } from "../../compiler/pipeline.js";
import { recordKey, type RecordKeys } from "../../compiler/manifest/recordCache.js";
import { MODULE_INDEX_KEY, MODULE_INDEX_PATH, moduleCacheWriter, moduleKeys } from "../../compiler/render/moduleCache.js";
import { assetRenderInputs, dagRenderInputs, modulePath, renderDagModule, renderFreshnessMonitor, usedAssets } from "../../compiler/render/renderModules.js";
import { CACHE_MAGIC, decodeCacheEntry } from "../../compiler/support/cacheEntry.js";
import { RACY_MARGIN_NS, readStamp, sameStamp, stampOf, trustedStamp, writeStamps, type FileStamp } from "../../compiler/support/fileStamp.js";
import { COMPILER_NAME, COMPILER_VERSION } from "../../compiler/version.js";
import { openWrite } from "../../compiler/write/writeOutputs.js";
import { modulesToRender, REPO, snapshot, corpusCopies, compileRoot, exitedProcessId } from "./helpers.js";

// The render stage's incremental cache (ADR 0017n): a DAG module whose inputs are the index's and
// whose file holds the index's hash is not rendered. What it skips must be what a render would
// write; the property test (test/property/incrementalCache.test.ts) compares whole outputs.

/** The manifests of every golden case: the records the render reads, in every shape the cases make. */
function goldenManifests(): Manifest[] {
  const cases = path.join(REPO, "test", "cases");
  return fs
    .readdirSync(cases)
    .map((c) => path.join(cases, c, "expected", "generated", "manifest.json"))
    .filter((f) => fs.statSync(f, { throwIfNoEntry: false })?.isFile())
    .flatMap((f) => {
      // A case whose output is a damaged manifest left as it was (CA1101) has no records to render.
      try {
        const m = JSON.parse(fs.readFileSync(f, "utf8")) as Manifest;
        return m.manifestVersion === 2 && Array.isArray(m.dags) && Array.isArray(m.assets) ? [m] : [];
      } catch {
        return [];
      }
    });
}

/** `value` behind a proxy that records the name of every property read of it (`prefix.name`). */
function recording<T extends object>(value: T, prefix: string, reads: Set<string>, inner?: (key: string, v: unknown) => unknown): T {
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== "string") return v;
      reads.add(`${prefix}.${key}`);
      return inner ? inner(key, v) : v;
    },
  });
}

const copyCorpus = corpusCopies("ca-modules", 30, 20261202);
const compile = compileRoot;

/** The generated DAG modules of a root, project-relative and sorted. */
function modules(root: string): string[] {
  // Sort for determinism.
  return [...snapshot(path.join(root, "generated")).keys()].filter((f) => f.endsWith(".py")).map((f) => `generated/${f.split(path.sep).join("/")}`).sort();
}

describe("the render stage's incremental cache", () => {
  it("keys a module by every field its render reads: the render of each golden DAG reads nothing outside dagRenderInputs and assetRenderInputs", () => {
    let dags = 0;
    let monitors = 0;
    for (const manifest of goldenManifests()) {
      const reads = new Set<string>();
      const assets = new Map(manifest.assets.map((a) => [a.name, recording(a, "asset", reads)] as [string, ManifestAsset]));
      for (const dag of manifest.dags) {
        const watched = recording(dag, "dag", reads, (key, v) =>
          key === "tasks" ? recording(v as object[], "dag.tasks", reads, (i, t) => (i === "0" ? recording(t as object, "dag.tasks.0", reads) : t)) : v,
        );
        // Read through the proxies, the render is the same text.
        expect(renderDagModule(watched as DagPlan, assets)).toBe(renderDagModule(dag, new Map(manifest.assets.map((a) => [a.name, a]))));
        dags++;
      }
      if (manifest.freshness_monitor) {
        renderFreshnessMonitor(manifest.freshness_monitor, assets);
        monitors++;
      }
      const sample = { dag: manifest.dags[0], asset: manifest.assets[0] };
      const allowed = new Set([
        ...(sample.dag ? Object.keys(dagRenderInputs(sample.dag)).map((k) => `dag.${k}`) : []),
        ...(sample.asset ? Object.keys(assetRenderInputs(sample.asset)).map((k) => `asset.${k}`) : []),
        // tasks: only the first task's inlets are in the key.
        "dag.tasks.0",
        "dag.tasks.0.inlets",
      ]);
      expect([...reads].filter((r) => !allowed.has(r))).toEqual([]);
    }
    // The cases render DAGs and freshness monitors (a case without either would prove nothing).
    expect(dags).toBeGreaterThan(50);
    expect(monitors).toBeGreaterThan(0);
  });

  it("renders no unchanged module, and rewrites or reports a hand-edited or deleted one", () => {
    const root = copyCorpus();
    const first = compile(root, { cache: true });
    const all = modules(root);
    expect(first.cache?.modules).toEqual({ unchanged: 0, rendered: all.length });
    expect(fs.statSync(path.join(root, MODULE_INDEX_PATH)).isFile()).toBe(true);
    // Nothing changed: every module is found on the disk by its hash, none rendered; a temporary a
    // killed write left beside one is still stale (ADR 0017i), since the module counts as added.
    const temporary = `${all[0]!}.tmp-${exitedProcessId()}-0badcafe`;
    fs.writeFileSync(path.join(root, temporary), "");
    const again = compile(root, { cache: true });
    expect(again.cache?.modules).toEqual({ unchanged: all.length, rendered: 0 });
    expect(again.written?.deleted).toEqual([temporary]);

    // A hand edit of the same size (only a hash can tell), and a deleted module.
    const [edited, deleted] = [all[1]!, all[2]!];
    const text = fs.readFileSync(path.join(root, edited), "utf8");
    fs.writeFileSync(path.join(root, edited), text.replace("catchup=False", "catchup=Fals3"));
    expect(fs.statSync(path.join(root, edited)).size).toBe(Buffer.byteLength(text));
    fs.rmSync(path.join(root, deleted));
    const checked = compile(root, { cache: true, check: true });
    const drift = checked.diagnostics.filter((d) => d.code === "CA9001");
    expect(new Map(drift.map((d) => [d.location?.file, d.message.includes("missing")]))).toEqual(new Map([[edited, false], [deleted, true]]));
    expect(drift.length).toBe(2);
    expect(checked.written?.drift?.find((f) => f.path === edited)?.compiled).toBe(text);
    // --check wrote nothing; compile rewrites both, byte for byte the render.
    expect(fs.existsSync(path.join(root, deleted))).toBe(false);
    const fixed = compile(root, { cache: true });
    expect(fixed.written?.written).toEqual([edited, deleted].sort());
    expect(fixed.cache?.modules).toEqual({ unchanged: all.length - 2, rendered: 2 });
    expect(fs.readFileSync(path.join(root, edited), "utf8")).toBe(text);
    const reference = copyCorpus();
    compile(reference);
    expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
  });

  it("ignores a damaged, foreign or unreadable index with one CA1951 note, renders every module, and writes it again", () => {
    const root = copyCorpus();
    const reference = copyCorpus();
    compile(root, { cache: true });
    const cold = compile(reference);
    const index = path.join(root, MODULE_INDEX_PATH);
    const entry = fs.readFileSync(index);
    const cases: Array<[string, () => void, RegExp]> = [
      ["cut short", () => fs.writeFileSync(index, entry.subarray(0, entry.length - 9)), /is damaged \(cut short\)/],
      ["garbage", () => fs.writeFileSync(index, "not an index\n"), /is damaged \(not a cache entry\)/],
      ["altered", () => fs.writeFileSync(index, Buffer.concat([entry.subarray(0, entry.length - 1), Buffer.from([entry[entry.length - 1]! ^ 1])])), /is damaged \(its content does not match its sha256\)/],
      // Another build of the render: the same header but another fingerprint (same length).
      ["foreign", () => fs.writeFileSync(index, Buffer.from(entry.toString("latin1").replace(/\(render [0-9a-f]{16}\)/, "(render 0000000000000000)"), "latin1")), /is foreign \(written by .*\(render 0000000000000000\)/],
      ["a folder", () => (fs.rmSync(index), fs.mkdirSync(index)), /is unreadable \(a folder\)/],
    ];
    for (const [name, damage, note] of cases) {
      damage();
      // A module edited by hand meanwhile is rewritten too: no entry of the index was trusted.
      const result = compile(root, { cache: true });
      const notes = result.diagnostics.filter((d) => d.code === "CA1951");
      expect(notes.map((d) => [d.severity, d.location?.file]), name).toEqual([["info", MODULE_INDEX_PATH]]);
      expect(notes[0]!.message, name).toMatch(note);
      expect(result.diagnostics.filter((d) => d.code !== "CA1951" && d.code !== "CA9951"), name).toEqual(cold.diagnostics);
      expect(result.cache?.modules?.unchanged, name).toBe(0);
      expect(snapshot(path.join(root, "generated")), name).toEqual(snapshot(path.join(reference, "generated")));
      if (name === "a folder") {
        // The folder stays in the way: the index cannot be written either (CA9951), and says so.
        expect(result.diagnostics.filter((d) => d.code === "CA9951").map((d) => d.location?.file)).toEqual([MODULE_INDEX_PATH]);
        fs.rmSync(index, { recursive: true });
      }
      // Written again: the next compile skips every module and says nothing.
      const again = compile(root, { cache: true });
      expect(again.diagnostics.filter((d) => d.code === "CA1951"), name).toEqual([]);
      if (name !== "a folder") expect(again.cache?.modules?.rendered, name).toBe(0);
    }
    expect(entry.subarray(0, CACHE_MAGIC.length).toString("latin1")).toBe(CACHE_MAGIC);
  });

  it("is neither read nor written without the cache, nor when the compile keeps its files in memory", () => {
    const root = copyCorpus();
    compile(root);
    expect(fs.existsSync(path.join(root, ".contract-assets"))).toBe(false);
    const kept = compileProject(defaultLayout(root), { write: "write", cache: true, keepFiles: true });
    // Every file rendered into the map: nothing skipped, no index.
    expect(kept.cache?.modules).toBeUndefined();
    expect(kept.files?.size).toBe(modules(root).length + 1);
    expect(fs.existsSync(path.join(root, MODULE_INDEX_PATH))).toBe(false);
  });

  describe("keys of the manifest's records (ADR 0017r)", () => {
    it("keys a DAG module by its records' keys where every record it needs has one, and by the fields (ADR 0017n) where one has none", () => {
      const manifest = goldenManifests().find((m) => m.freshness_monitor && m.dags.some((d) => usedAssets(d).some((n) => m.assets.some((a) => a.name === n))))!;
      const writer = moduleCacheWriter(COMPILER_NAME, COMPILER_VERSION);
      const keys: RecordKeys = { assets: manifest.assets.map(recordKey), dags: manifest.dags.map(recordKey) };
      expect([...keys.assets, ...keys.dags].every((k) => typeof k === "string")).toBe(true);
      const modulesCount = manifest.dags.length + 1;
      const ofFields = moduleKeys(manifest, "generated", writer);
      const ofRecords = moduleKeys(manifest, "generated", writer, keys);
      // The last record of a name, as the render looks it up; a name with none is `null`.
      const assetKey = (name: string): string => {
        const at = manifest.assets.map((a) => a.name).lastIndexOf(name);
        return at < 0 ? "null" : keys.assets[at]!;
      };
      const sha = (text: string): Buffer => createHash("sha256").update(text).digest();
      manifest.dags.forEach((dag, i) => {
        const expected = ["records", JSON.stringify(writer), JSON.stringify(modulePath("generated", dag.dag_id)), keys.dags[i]!, ...usedAssets(dag).map(assetKey)].join("\n");
        expect(ofRecords(i).equals(sha(expected)), dag.dag_id).toBe(true);
        expect(ofRecords(i).equals(ofFields(i)), dag.dag_id).toBe(false);
      });
      // The freshness monitor's module keeps the key of fields.
      expect(ofRecords(manifest.dags.length).equals(ofFields(manifest.dags.length))).toBe(true);

      // A DAG record without a key, and an Asset record without one: those modules fall back to the
      // key of fields (exactly today's), the rest keep the key of records.
      const used = manifest.dags.findIndex((d) => usedAssets(d).some((n) => manifest.assets.some((a) => a.name === n)));
      const name = usedAssets(manifest.dags[used]!).find((n) => manifest.assets.some((a) => a.name === n))!;
      const keyless = manifest.assets.map((a) => a.name).lastIndexOf(name);
      const lone = manifest.dags.findIndex((d, i) => i !== used);
      const partial: RecordKeys = { assets: keys.assets.map((k, i) => (i === keyless ? undefined : k)), dags: keys.dags.map((k, i) => (i === lone ? undefined : k)) };
      const mixed = moduleKeys(manifest, "generated", writer, partial);
      let fellBack = 0;
      manifest.dags.forEach((dag, i) => {
        const falls = i === lone || usedAssets(dag).includes(name);
        if (falls) fellBack++;
        expect(mixed(i).equals(falls ? ofFields(i) : ofRecords(i)), dag.dag_id).toBe(true);
      });
      expect(fellBack).toBeGreaterThanOrEqual(2);
      // Keys of another manifest (other lengths) are not used at all.
      const other = moduleKeys(manifest, "generated", writer, { assets: keys.assets.slice(1), dags: keys.dags });
      for (let i = 0; i < modulesCount; i++) expect(other(i).equals(ofFields(i))).toBe(true);
    });

    it("renders again, and right, the modules of the consumers of an Asset whose schema changed, which the render does not read", () => {
      const root = copyCorpus();
      const first = compile(root, { cache: true });
      const manifest = first.manifest!;
      // An Asset declared by DAGs of other contracts than its own (its consumers), the only one of its contract.
      const consumersOf = (name: string, contract: string): string[] => manifest.dags.filter((d) => d.contract !== contract && usedAssets(d).includes(name)).map((d) => modulePath("generated", d.dag_id));
      const asset = manifest.assets.find((a) => !a.external && consumersOf(a.name, a.contract).length >= 2 && manifest.assets.filter((b) => b.contract === a.contract).length === 1)!;
      const consumers = consumersOf(asset.name, asset.contract);
      // A column's description: in the Asset's record (its schema), not in what its consumers render.
      const file = path.join(root, asset.contract);
      const text = fs.readFileSync(file, "utf8");
      const edited = text.replace(/(\{name: [^\n]*description: ")/, "$1schema edit ");
      expect(edited).not.toBe(text);
      fs.writeFileSync(file, edited);
      const before = new Map(consumers.map((m) => [m, fs.readFileSync(path.join(root, m), "utf8")]));
      const warm = compile(root, { cache: true });
      const after = warm.manifest!.assets.find((a) => a.name === asset.name)!;
      expect(after.schema).not.toEqual(asset.schema);
      expect(assetRenderInputs(after)).toEqual(assetRenderInputs(asset));
      // Rendered again: every module declaring an Asset of the edited contract, or of that contract.
      const rendered = modulesToRender(manifest, warm.manifest!);
      expect(rendered).toBeGreaterThanOrEqual(consumers.length + 1);
      expect(warm.cache?.modules).toEqual({ rendered, unchanged: modules(root).length - rendered });
      // Their text is what it was: not written, and what a compile without the cache writes.
      for (const m of consumers) expect(warm.written?.written).not.toContain(m);
      for (const [m, t] of before) expect(fs.readFileSync(path.join(root, m), "utf8")).toBe(t);
      const reference = copyCorpus();
      fs.writeFileSync(path.join(reference, asset.contract), edited);
      compile(reference);
      expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
      // Next time, nothing changed: none rendered.
      expect(compile(root, { cache: true }).cache?.modules).toEqual({ rendered: 0, unchanged: modules(root).length });
    });
  });

  describe("stamps of module files (ADR 0017q)", () => {
    const sha = (text: string): Buffer => createHash("sha256").update(text).digest();
    const stamp = (file: string): FileStamp => stampOf(fs.lstatSync(file, { bigint: true }));
    /** `touch -r`: the mtime (and atime) of `from`, to the nanosecond, which `fs.utimesSync`'s seconds cannot give. */
    const touchFrom = (from: string, to: string): void => expect(spawnSync("touch", ["-r", from, to]).status).toBe(0);

    it("trusts a file whose lstat is still its stamp without reading it, and reads one edited with its size and mtime restored, copied back with cp -p, or replaced", () => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-stamps-"));
      const layout = defaultLayout(root);
      const relative = "generated/dags/a.py";
      const file = path.join(root, relative);
      const [text, edit] = ["catchup=False\n", "catchup=Fals3\n"];
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
      const reference = path.join(root, "reference.py");
      expect(spawnSync("cp", ["-p", file, reference]).status).toBe(0);
      const check = () => openWrite(layout, { check: true });
      // Hashed: the stamp is the file's, taken before its bytes were read.
      const taken = check().holdsDigest(relative, sha(text));
      expect(taken).toEqual(stamp(file));
      expect(check().holdsDigest(relative, sha(edit))).toBe(false);
      // The same stamp: not read (a digest it does not have is not even looked at).
      expect(check().holdsDigest(relative, sha(edit), taken as FileStamp)).toEqual(taken);

      // Edited by hand, the same size, the mtime put back to the nanosecond: only the ctime says so.
      fs.writeFileSync(file, edit);
      touchFrom(reference, file);
      const edited = stamp(file);
      expect(edited.slice(0, 4)).toEqual((taken as FileStamp).slice(0, 4));
      expect(edited[4]).not.toBe((taken as FileStamp)[4]);
      expect(check().holdsDigest(relative, sha(text), taken as FileStamp)).toBe(false);
      expect(check().holdsDigest(relative, sha(edit), taken as FileStamp)).toEqual(edited);
      // Copied back with cp -p (the same inode, size and mtime as `edited`'s, a new ctime).
      expect(spawnSync("cp", ["-p", reference, file]).status).toBe(0);
      fs.writeFileSync(file, edit);
      touchFrom(reference, file);
      expect(check().holdsDigest(relative, sha(text), edited)).toBe(false);
      const copied = stamp(file);
      // Replaced: another file of the same size and mtime renamed over it (another inode).
      const other = path.join(root, "generated/dags/other.py");
      fs.writeFileSync(other, text);
      touchFrom(file, other);
      fs.renameSync(other, file);
      expect(stamp(file)[1]).not.toBe(copied[1]);
      expect(check().holdsDigest(relative, sha(edit), copied)).toBe(false);
      expect(check().holdsDigest(relative, sha(text), copied)).toEqual(stamp(file));
      // A FIFO or a folder in its place: never trusted, never read (the FIFO would block), never the digest.
      fs.rmSync(file);
      expect(spawnSync("mkfifo", [file]).status).toBe(0);
      expect(check().holdsDigest(relative, sha(text), stamp(file))).toBe(false);
      fs.rmSync(file);
      fs.mkdirSync(file);
      expect(check().holdsDigest(relative, sha(text), stamp(file))).toBe(false);
      fs.rmSync(file, { recursive: true });
      expect(check().holdsDigest(relative, sha(text), copied)).toBe(false);
    });

    it("keeps a stamp only when the file's mtime and ctime are older than the moment by more than the margin (git's racily clean rule)", () => {
      const since = 1_764_650_000_000_000_000n;
      const old = since - RACY_MARGIN_NS - 1n;
      const s = (mtime: bigint, ctime: bigint): FileStamp => [2049n, 12n, 14n, mtime, ctime];
      expect(trustedStamp(s(old, old), since)).toEqual(s(old, old));
      // Changed in the margin; or an mtime put back (touch -r) whose ctime is recent.
      expect(trustedStamp(s(old + 1n, old + 1n), since)).toBeUndefined();
      expect(trustedStamp(s(old, since), since)).toBeUndefined();
      expect(trustedStamp(s(since, old), since)).toBeUndefined();
      // Stored as signed 64-bit numbers: an inode number of 64 bits is the same stamp read back; none is none.
      const table = new BigInt64Array(10);
      const big: FileStamp = [2049n, 2n ** 64n - 5n, 0n, -1_000_000_000n, old];
      writeStamps(table, 0, big);
      writeStamps(table, 1, undefined);
      expect(sameStamp(readStamp(table, 0)!, big)).toBe(true);
      expect(sameStamp(readStamp(table, 0)!, [2049n, 2n ** 64n - 4n, 0n, -1_000_000_000n, old])).toBe(false);
      expect(readStamp(table, 1)).toBeUndefined();
    });

    it("in a compile: stamps the modules it hashed, trusts them next time, and renders again one edited by hand with its size and mtime restored, or replaced", async () => {
      const root = copyCorpus();
      const reference = copyCorpus();
      compile(reference);
      compile(root, { cache: true });
      const all = modules(root);
      const indexStamps = (): Map<string, FileStamp | undefined> => {
        const decoded = decodeCacheEntry(fs.readFileSync(path.join(root, MODULE_INDEX_PATH)), { key: MODULE_INDEX_KEY, compiler: moduleCacheWriter(COMPILER_NAME, COMPILER_VERSION) });
        const value = (decoded as { value: { paths: string[]; stamps: BigInt64Array } }).value;
        return new Map(value.paths.map((p, i) => [p, readStamp(value.stamps, i)]));
      };
      // Rendered (or just written): no stamp yet. Hashed more than the margin after: stamped.
      expect([...indexStamps().values()].every((s) => s === undefined)).toBe(true);
      await new Promise((done) => setTimeout(done, Number(RACY_MARGIN_NS / 1_000_000n) + 200));
      expect(compile(root, { cache: true }).cache?.modules).toEqual({ unchanged: all.length, rendered: 0 });
      const stamps = indexStamps();
      for (const m of all) expect(sameStamp(stamps.get(m)!, stamp(path.join(root, m))), m).toBe(true);
      expect(compile(root, { cache: true }).cache?.modules).toEqual({ unchanged: all.length, rendered: 0 });

      const [edited, replaced] = [all[3]!, all[4]!].map((m) => path.join(root, m)) as [string, string];
      const [editedText, replacedText] = [fs.readFileSync(edited, "utf8"), fs.readFileSync(replaced, "utf8")];
      const saved = path.join(root, "saved.py");
      expect(spawnSync("cp", ["-p", edited, saved]).status).toBe(0);
      fs.writeFileSync(edited, editedText.replace("catchup=False", "catchup=Fals3"));
      touchFrom(saved, edited);
      // Only its ctime tells: the same device, inode, size and mtime as the stamp the index holds.
      expect(stamp(edited).slice(0, 4)).toEqual(stamps.get(all[3]!)!.slice(0, 4));
      const other = `${replaced}.other`;
      fs.writeFileSync(other, replacedText.replace("catchup=False", "catchup=Fals3"));
      touchFrom(replaced, other);
      fs.renameSync(other, replaced);
      const checked = compile(root, { cache: true, check: true });
      expect(checked.diagnostics.filter((d) => d.code === "CA9001").map((d) => d.location?.file)).toEqual([all[3]!, all[4]!]);
      const fixed = compile(root, { cache: true });
      expect(fixed.written?.written).toEqual([all[3]!, all[4]!]);
      expect(fixed.cache?.modules).toEqual({ unchanged: all.length - 2, rendered: 2 });
      fs.rmSync(saved);
      expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
    }, 60_000);
  });
});
