#!/usr/bin/env node
// The contract-assets command. The TypeScript sources are built into dist/ by `npm install`
// (the package's "prepare" script).
import { main } from "../dist/compiler/cli.js";

await main(process.argv);
