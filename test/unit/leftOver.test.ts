import { describe, expect, it } from "vitest";
import { isLeftOverTemporary, isOtherRunningProcess, STALE_TEMPORARY_MS } from "../../compiler/write/leftOver.js";
import { exitedProcessId } from "./helpers.js";

// ADR 0017z: a temporary is another compile's while its writer runs and it is younger than ten minutes.
describe("a temporary left over or another compile's", () => {
  it("knows another running process from this one, one that exited, and ids no process has", () => {
    expect(isOtherRunningProcess(process.ppid)).toBe(true);
    expect(isOtherRunningProcess(process.pid)).toBe(false);
    expect(isOtherRunningProcess(exitedProcessId())).toBe(false);
    for (const id of [0, -1, 1.5, Number.NaN, 2 ** 53]) expect(isOtherRunningProcess(id), String(id)).toBe(false);
  });

  it("is left over when its writer is not running, or when it is older than ten minutes whoever wrote it", () => {
    const now = Date.now();
    expect(isLeftOverTemporary(process.ppid, now - 1000, now)).toBe(false);
    expect(isLeftOverTemporary(process.ppid, now - STALE_TEMPORARY_MS, now)).toBe(false);
    expect(isLeftOverTemporary(process.ppid, now - STALE_TEMPORARY_MS - 1, now)).toBe(true);
    expect(isLeftOverTemporary(process.ppid, now + STALE_TEMPORARY_MS - 1, now)).toBe(false);
    expect(isLeftOverTemporary(process.ppid, now + STALE_TEMPORARY_MS + 1, now)).toBe(true);
    expect(isLeftOverTemporary(exitedProcessId(), now - 1000, now)).toBe(true);
    expect(isLeftOverTemporary(process.pid, now - 1000, now)).toBe(true);
  });
});
