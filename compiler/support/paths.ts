import path from "node:path";

/**
 * POSIX path helpers. Every path that crosses a stage is relative to the project root and uses `/`,
 * so output never carries a machine's absolute path or its separator (DESIGN §2.5).
 */
export function toPosix(p: string): string {
  return p.split(path.sep).join("/");
}

/** `target` relative to `root`, with `/` separators. */
export function relativePosix(root: string, target: string): string {
  return toPosix(path.relative(root, target));
}

/**
 * Whether a project-relative path stays inside the project: not absolute, no `..` segment that
 * climbs above the root once normalised.
 */
export function staysInside(relative: string): boolean {
  if (relative === "" || path.posix.isAbsolute(relative) || /^[A-Za-z]:[\\/]/.test(relative)) return false;
  if (relative.includes("\\") || relative.includes("\0")) return false;
  const normal = path.posix.normalize(relative);
  return normal !== ".." && !normal.startsWith("../") && normal !== ".";
}
