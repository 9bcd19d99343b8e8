import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fileHoldsText } from "../../compiler/discover/discoverProject.js";
import { asciiJson, canonicalJson, canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
import { compareStrings } from "../../compiler/support/compare.js";
import { cronProblem, isKnownTimezone } from "../../compiler/support/cron.js";
import { parseDurationSeconds } from "../../compiler/support/duration.js";
import { gitBlobId, sha256Hex } from "../../compiler/support/hash.js";
import { airflowRefusal, postgresCorrection } from "../../compiler/support/uri.js";
import { staysInside } from "../../compiler/support/paths.js";
import { maskSecrets } from "../../compiler/support/secrets.js";
import { didYouMean, operatorMeant, suggest } from "../../compiler/support/suggest.js";
import { normaliseUri } from "../../compiler/support/uri.js";
import { CHUNK_CHARS, utf8Chunks } from "../../compiler/support/utf8.js";
import { REPO } from "./helpers.js";

describe("normaliseUri (Airflow's _sanitize_uri rules)", () => {
  it.each([
    ["S3://landing/orders/#v2", "s3://landing/orders"],
    ["s3://landing/orders/", "s3://landing/orders"],
    ["s3://Landing/Orders?b=2&a=1", "s3://Landing/Orders?a=1&b=2"],
    ["s3://bucket", "s3://bucket/"],
    ["s3://bucket/", "s3://bucket/"],
    ["x-datalake://raw/a/b/", "x-datalake://raw/a/b/"],
    ["X-Datalake://Raw/A#frag", "X-Datalake://Raw/A#frag"],
    ["no-scheme/path", "no-scheme/path"],
  ])("%s -> %s", (input, expected) => {
    expect(normaliseUri(input)).toBe(expected);
  });
});

describe("compareStrings", () => {
  it("orders by code unit, not locale", () => {
    expect(["b", "B", "a", "é", "Z"].sort(compareStrings)).toEqual(["B", "Z", "a", "b", "é"]);
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and ends with a newline", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe(
      '{\n  "a": {\n    "c": null,\n    "d": [\n      2,\n      {\n        "y": 2,\n        "z": 1\n      }\n    ]\n  },\n  "b": 1\n}\n',
    );
  });
  it("refuses values JSON cannot carry", () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ a: undefined })).toThrow(TypeError);
  });
  it("built record by record (the manifest's), is canonicalJson's text with non-ASCII escaped", () => {
    const values: Array<Record<string, unknown>> = [
      {},
      { z: [], a: {}, m: [{ b: "Umsätze 😀", a: ["x", { d: 1, c: "\u2028" }] }, 3, null, [[]], "ä"], k: { y: "é", x: [1] } },
      // Arrays longer than a piece, with non-ASCII records at the joins.
      { b: Array.from({ length: 401 }, (_, i) => ({ n: i, t: i % 200 === 0 || i % 7 === 3 ? "Ümlaut — 😀" : "a", o: { z: [i], y: {} } })), a: 1 },
      JSON.parse(fs.readFileSync(path.join(REPO, "generated", "manifest.json"), "utf8")) as Record<string, unknown>,
    ];
    for (const value of values) {
      const text = canonicalJsonAscii(value);
      expect(text).toBe(asciiJson(canonicalJson(value)));
      expect(/[^\x00-\x7f]/.test(text)).toBe(false);
      expect(JSON.parse(text)).toEqual(JSON.parse(canonicalJson(value)));
    }
    expect(asciiJson('"Umsätze 😀"')).toBe('"Ums\\u00e4tze \\ud83d\\ude00"');
    expect(() => canonicalJsonAscii({ a: undefined })).toThrow(TypeError);
  });
});

describe("utf8Chunks and fileHoldsText", () => {
  // Two chunks and a bit, a surrogate pair across the first boundary, non-ASCII throughout.
  const text = `${"a".repeat(CHUNK_CHARS - 1)}😀${"Umsätze €\n".repeat(Math.ceil(CHUNK_CHARS / 10))}end`;
  it("encodes a large text chunk by chunk as Buffer.from does, never splitting a character", () => {
    const copies = [...(function* () {
      for (const chunk of utf8Chunks(text)) yield Buffer.from(chunk);
    })()];
    expect(copies.length).toBe(3);
    expect(copies[0]!.length).toBe(CHUNK_CHARS - 1);
    expect(Buffer.concat(copies).equals(Buffer.from(text, "utf8"))).toBe(true);
    expect([...utf8Chunks("")]).toEqual([]);
  });
  it("compares a file with a large text byte for byte", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-utf8-"));
    try {
      const file = path.join(dir, "big.txt");
      const bytes = Buffer.from(text, "utf8");
      fs.writeFileSync(file, bytes);
      expect(fileHoldsText(file, text)).toBe(true);
      // One byte of the last chunk changed, the length kept.
      bytes[bytes.length - 2] = "x".charCodeAt(0);
      fs.writeFileSync(file, bytes);
      expect(fileHoldsText(file, text)).toBe(false);
      expect(fileHoldsText(path.join(dir, "missing.txt"), text)).toBe(false);
      // One byte more, one byte less, the same bytes: only the last holds the text.
      const exact = Buffer.from(text, "utf8");
      fs.writeFileSync(file, Buffer.concat([exact, Buffer.from("x")]));
      expect(fileHoldsText(file, text)).toBe(false);
      fs.writeFileSync(file, exact.subarray(0, exact.length - 1));
      expect(fileHoldsText(file, text)).toBe(false);
      fs.writeFileSync(file, exact);
      expect(fileHoldsText(file, text)).toBe(true);
      // Sizes no UTF-8 encoding of the text can have; and an empty text.
      fs.writeFileSync(file, "é");
      expect(fileHoldsText(file, "éé")).toBe(false);
      expect(fileHoldsText(file, "é")).toBe(true);
      fs.writeFileSync(file, "");
      expect(fileHoldsText(file, "")).toBe(true);
      expect(fileHoldsText(file, "a")).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it("compares a small text (a DAG module's, encoded whole into a kept buffer) byte for byte", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-utf8-"));
    try {
      const file = path.join(dir, "module.py");
      // Up to the largest small text (65,536 units, three bytes each), a lone surrogate (written as
      // U+FFFD) among them; the first again last, compared after the largest filled the kept buffers.
      for (const small of ["x = 1\n", `# Umsätze €😀 \ud800\n${"y".repeat(3000)}`, "€".repeat(1 << 16), "x = 1\n"]) {
        const exact = Buffer.from(small, "utf8");
        fs.writeFileSync(file, exact);
        expect(fileHoldsText(file, small)).toBe(true);
        expect(fileHoldsText(file, `${small}!`)).toBe(false);
        const changed = Buffer.from(exact);
        changed[changed.length >> 1] ^= 1;
        fs.writeFileSync(file, changed);
        expect(fileHoldsText(file, small)).toBe(false);
        fs.writeFileSync(file, Buffer.concat([exact, Buffer.from("\n")]));
        expect(fileHoldsText(file, small)).toBe(false);
        fs.writeFileSync(file, exact.subarray(0, exact.length - 1));
        expect(fileHoldsText(file, small)).toBe(false);
      }
      // A folder where the file should be holds no text.
      expect(fileHoldsText(dir, "x")).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("durations", () => {
  it.each([
    ["PT26H", 93600],
    ["P1DT2H30M", 95400],
    ["P2W", 1209600],
    ["PT1.5S", 1.5],
  ])("%s is %d seconds", (text, seconds) => expect(parseDurationSeconds(text)).toBe(seconds));
  it.each(["P1M", "P1Y", "PT", "P", "26h", "PT0S", "PT0.5S", "PT0.0000001S", "P999999999999W", "PT9007199254740993S", ""])("%s is refused", (text) => expect(parseDurationSeconds(text)).toBeUndefined());
});

describe("cron and time zones", () => {
  it("accepts five fields and presets", () => {
    expect(cronProblem("0 3 * * *")).toBeUndefined();
    expect(cronProblem("*/15 9-17 * * MON-FRI")).toBeUndefined();
    expect(cronProblem("@daily")).toBeUndefined();
  });
  it("refuses other shapes with a reason", () => {
    expect(cronProblem("0 3 * *")).toMatch(/expected 5 fields/);
    expect(cronProblem("0 0 0 * * *")).toMatch(/found 6/);
    expect(cronProblem("@sometimes")).toMatch(/unknown preset/);
    expect(cronProblem("0 25 * * *")).toMatch(/0-23/);
  });
  it("knows IANA zones", () => {
    expect(isKnownTimezone("Europe/Berlin")).toBe(true);
    expect(isKnownTimezone("UTC")).toBe(true);
    expect(isKnownTimezone("Mars/Olympus")).toBe(false);
    expect(isKnownTimezone("../etc")).toBe(false);
  });
});

describe("paths, secrets, hashes, suggestions", () => {
  it("keeps paths inside the project", () => {
    expect(staysInside("sql/a.sql")).toBe(true);
    expect(staysInside("sql/../sql/a.sql")).toBe(true);
    for (const p of ["../a.sql", "/etc/passwd", "sql/../../a", "C:\\x.sql", "", "."]) expect(staysInside(p), p).toBe(false);
  });
  it("masks user info in any text", () => {
    expect(maskSecrets('uri "s3://svc:hunter2@bucket/x" and postgres://u@h:5432/db')).toBe('uri "s3://***@bucket/x" and postgres://***@h:5432/db');
  });
  it("computes git blob ids like git hash-object", () => {
    // `printf 'hello\n' | git hash-object --stdin`
    expect(gitBlobId(Buffer.from("hello\n"))).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });
  it("suggests only close names", () => {
    expect(suggest("ownr", ["owner", "domain"])).toBe("owner");
    expect(suggest("completely_different", ["owner", "domain"])).toBeUndefined();
  });
  it("suggests a trigger operator by meaning: and/all_of/& are all, or/anyOf/| are any", () => {
    const ops = ["all", "any"];
    for (const w of ["and", "AND", "And", "all_of", "allOf", "ALL-OF", "every", "both", "&", "&&"]) expect(operatorMeant(w, ops), w).toBe("all");
    for (const w of ["or", "OR", "any_of", "anyOf", "one_of", "oneOf", "some", "either", "|", "||"]) expect(operatorMeant(w, ops), w).toBe("any");
    // By spelling alone "and" is one edit from "any": the opposite of what was meant.
    expect(suggest("and", ops)).toBe("any");
    expect(didYouMean("and", ops)).toMatch(/^did you mean "all"\?/);
    expect(didYouMean("ALL", ops)).toBe('did you mean "all"?');
    expect(didYouMean("alll", ops)).toBe('did you mean "all"?');
    // Only where the operators are what is expected.
    expect(operatorMeant("and", ["all", "any", "none"])).toBeUndefined();
    expect(didYouMean("and", ["any", "owner"])).toBe('did you mean "any"?');
  });
});

describe("postgresCorrection (the CA3048 hint)", () => {
  it("gives the provider's shape, keeping what was written, with a placeholder for each missing part, and Airflow accepts it filled in", () => {
    const cases: Array<[string, string]> = [
      ["postgres://db/schema/table", "postgres://db:5432/<database>/schema/table"],
      ["postgresql://h", "postgresql://h:5432/<database>/<schema>/<table>"],
      ["postgres://h:abc/d/s/t", "postgres://h:<port>/d/s/t"],
      ["postgres:///d/s/t", "postgres://<host>:5432/d/s/t"],
      ["postgres://h:/d/s/t", "postgres://h:5432/d/s/t"],
      ["postgres://h:6543/a/b/c/d", "postgres://h:6543/<database>/<schema>/<table>"],
    ];
    for (const [uri, corrected] of cases) {
      expect(airflowRefusal(uri), uri).toBeDefined();
      expect(postgresCorrection(uri), uri).toBe(corrected);
      expect(airflowRefusal(corrected.replace(/<port>/g, "5433").replace(/<(\w+)>/g, "$1")), corrected).toBeUndefined();
    }
    // A URI Airflow accepts, or of another scheme, has nothing to correct.
    expect(postgresCorrection("postgres://h/d/s/t")).toBeUndefined();
    expect(postgresCorrection("s3://bucket/key")).toBeUndefined();
  });
});
