import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { SourceFile } from "../discover/discoverProject.js";
import { defaultWorkerCount, parseAll } from "./parallelParse.js";
import { lookupParseCache, storeParsedFile, type ParseCache } from "./parseCache.js";
import { toParsedDocument, type ParsedData, type ParsedDocument } from "./parseDocument.js";

/**
 * The parse stage over many files: each file parsed on its own, so one broken file never hides the
 * problems of another. Output keeps the input order (already sorted by discover), whatever the
 * number of worker threads (`workers`; default {@link defaultWorkerCount}: none for a small
 * project). `onDocument` sees each usable document as soon as it is parsed, in no particular order
 * (the pipeline validates documents while the workers parse the rest). With `cache` (ADR 0017c),
 * a file whose entry is usable is not parsed: its {@link ParsedData} comes from the entry, and the
 * files parsed are recorded in the cache to be written. `onDocument` gets what the entry stored
 * beside the parse (the validate stage's verdict, ADR 0017j; undefined for a file just parsed)
 * and returns what to store beside a file just parsed (undefined: nothing; `NO_CACHE_ENTRY`: no
 * entry at all).
 */
export function parseContracts(
  files: readonly SourceFile[],
  options: { workers?: number; onDocument?: (document: ParsedDocument, stored?: unknown) => unknown; cache?: ParseCache } = {},
): StageResult<ParsedDocument[]> {
  const documents = new Array<StageResult<ParsedDocument | undefined>>(files.length);
  // `stored` is the entry's verdict for a file from the cache, undefined for a file just parsed,
  // whose entry is stored at once with the verdict `onDocument` returns (ADR 0017m).
  const take = (i: number, data: ParsedData, stored?: unknown): void => {
    const result = toParsedDocument(files[i]!, data);
    documents[i] = result;
    const keep = result.value ? options.onDocument?.(result.value, stored ?? undefined) : undefined;
    if (stored === undefined && options.cache) storeParsedFile(files[i]!, data, keep ?? null, options.cache);
  };
  // The cache is looked up before any parse work is shared out, so only the misses are parsed.
  const cached = options.cache ? lookupParseCache(files, options.cache) : undefined;
  const missing = cached ? cached.flatMap((entry, i) => (entry === undefined ? [i] : [])) : undefined;
  cached?.forEach((entry, i) => entry && take(i, entry.data, entry.verdict));
  const toParse = missing ? missing.map((i) => files[i]!) : files;
  parseAll(toParse, options.workers ?? defaultWorkerCount(toParse), { onResult: (k, data) => take(missing ? missing[k]! : k, data) });
  const diagnostics: Diagnostic[] = [];
  const value: ParsedDocument[] = [];
  for (const result of documents) {
    diagnostics.push(...result.diagnostics);
    if (result.value) value.push(result.value);
  }
  return { value, diagnostics };
}
