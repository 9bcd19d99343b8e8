/**
 * Masks credentials in any text the compiler prints or writes.
 *
 * A URI's user-info (`scheme://user:password@host`) is replaced by `***`, so a secret that slipped
 * into a contract never reaches a terminal, a CI log or a JSON report (DESIGN §3.6). The formatters
 * apply it to every line they emit, message and source excerpt alike.
 */
export function maskSecrets(text: string): string {
  // Anchored on "://" so the scan is linear in the text; the user info runs to the last "@" before
  // the next "/" or line end, so a password holding "@", quotes, spaces, "?" or "#" is masked whole.
  return text.replace(/:\/\/[^/\n]*@/g, "://***@");
}
