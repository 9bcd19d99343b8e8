/**
 * Escaping for GitHub Actions workflow commands (`::error file=…,line=…::message`): `%`, CR and LF
 * always; also `:` and `,` inside a property value (GitHub's toolkit `escapeData`/`escapeProperty`).
 */
export function githubEscape(value: string, property: boolean): string {
  let out = value.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
  if (property) out = out.replace(/:/g, "%3A").replace(/,/g, "%2C");
  return out;
}
