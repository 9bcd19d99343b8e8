import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { pythonLiteral, pythonString } from "../../compiler/render/pythonLiteral.js";

const hostile = ['"; import os; os.system("x")', "'''", '"""', "back\\slash\\", "nul\u0000", "tab\t nl\n cr\r", "طلبات", "😀 emoji", "\ud800 lone", "\u2028\u2029", "\u007f"];

describe("pythonLiteral", () => {
  it("writes pure printable ASCII", () => {
    for (const s of hostile) expect(pythonString(s)).toMatch(/^"[\x20-\x7e]*"$/);
  });
  it("encodes JSON values as Python literals with sorted keys", () => {
    expect(pythonLiteral({ b: [1, 2.5, -0, true, null], a: "x" })).toBe('{"a": "x", "b": [1, 2.5, 0, True, None]}');
  });
  it("round-trips through a real Python interpreter", () => {
    const value = { strings: hostile.filter((s) => !s.includes("\ud800")), n: [0, -1, 1.5, 1e21, 123456789], nested: { "k\"ey": [null, false] } };
    const out = execFileSync("python3", ["-c", `import json,sys; print(json.dumps(${pythonLiteral(value)}, sort_keys=True))`], {
      env: { ...process.env, LANG: "C", LC_ALL: "C" },
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual(value);
  });
  it("refuses values that are not JSON", () => {
    expect(() => pythonLiteral(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => pythonLiteral(() => 1)).toThrow(TypeError);
  });
});
