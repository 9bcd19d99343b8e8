import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts", "test/golden/**/*.test.ts", "test/property/**/*.test.ts"],
    testTimeout: 60_000,
    // Hooks remove the large temporary projects some tests make (thousands of files): on a loaded
    // 2-core machine that took longer than vitest's 10 s default.
    hookTimeout: 120_000,
    pool: "forks",
    // Every temporary folder of a run in one, removed at its end (test/globalSetup.ts).
    globalSetup: ["test/globalSetup.ts"],
  },
});
