import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts", "test/golden/**/*.test.ts", "test/property/**/*.test.ts"],
    testTimeout: 60_000,
    pool: "forks",
  },
});
