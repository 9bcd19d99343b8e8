/**
 * Whether a temporary file a write staged is left over (its write stopped before renaming it) or
 * belongs to a write still going on in another process: the one rule of the output folder
 * (`writeOutputs.ts`) and of the cache (`writeCache.ts`), whose temporaries both carry their
 * writer's process id in their names.
 */

/**
 * A temporary whose modification time is further than this from now (older, or as far in the
 * future) is left over whoever wrote it: its writer's process id may be another process's since.
 * 10 minutes: longer than any one write of a compile (a cold compile of 10,000 contracts stages
 * its files in seconds).
 */
export const STALE_TEMPORARY_MS = 10 * 60 * 1000;

/**
 * Whether process `pid` is running on this machine and is not this process: `kill(pid, 0)`
 * (POSIX: no signal is sent, only the checks) succeeds, or fails with EPERM (it is running, as
 * another user). This process's own temporaries are never another write's: its writes run one
 * after the other, so one of them left beside its target is left over.
 */
export function isOtherRunningProcess(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Whether a temporary staged by process `writer`, last modified at `mtimeMs` (ms since the epoch),
 * is left over at `now`: its writer is not another running process, or its modification time is
 * more than {@link STALE_TEMPORARY_MS} from `now` (older, or as far in the future: a clock set
 * back). One that is neither is another compile's, still writing: not to be removed or reported
 * (two compiles of one project at once each keep their own temporaries).
 */
export function isLeftOverTemporary(writer: number, mtimeMs: number, now: number = Date.now()): boolean {
  return Math.abs(now - mtimeMs) > STALE_TEMPORARY_MS || !isOtherRunningProcess(writer);
}
