import { afterEach, describe, expect, it, vi } from "vitest";
import { guarded } from "../../compiler/cli.js";

describe("internal errors", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it("become one line and exit 2; --debug adds the stack trace", async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    await guarded({}, async () => {
      throw new Error("boom\nsecond line");
    });
    expect(process.exitCode).toBe(2);
    expect(lines.join("")).toBe("contract-assets: internal error: boom (please report it with the output of the same command run with --debug)\n");
    lines.length = 0;
    await guarded({ debug: true }, async () => {
      throw new Error("boom");
    });
    expect(lines.join("")).toMatch(/internal error: boom[\s\S]*\n\s+at /);
  });
});
