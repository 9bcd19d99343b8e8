/**
 * SQS queue URLs (issue 36, ADR 0034). Pure: imports nothing of the project.
 *
 * A queue URL is `https://sqs.<region>.amazonaws.com/<account id>/<queue name>` (the `.cn`
 * partition and the legacy `https://<region>.queue.amazonaws.com/...` host too), or the same path
 * on another endpoint (a VPC endpoint, a local emulator such as moto), where `http` is allowed.
 * The account id is 12 digits; the queue name 1–80 characters of letters, digits, `-` and `_`,
 * a FIFO queue's ending in `.fifo` (AWS, "Amazon SQS queue naming").
 */

const AWS_HOST = /(^|\.)amazonaws\.com(\.cn)?$/;
const AWS_SQS_HOST = /^(sqs\.[a-z0-9-]+\.amazonaws\.com(\.cn)?|[a-z0-9-]+\.queue\.amazonaws\.com(\.cn)?)$/;
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}(\.fifo)?$|^[A-Za-z0-9_-]{1,80}$/;

/**
 * What is wrong with `text` as an SQS queue URL, in a few words, or undefined when it is one.
 *
 * @returns e.g. `"it has no account id and queue name after the host"`; undefined for a valid URL.
 */
export function sqsQueueUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "it is not an absolute URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `its scheme is ${JSON.stringify(url.protocol.slice(0, -1))}, not https`;
  if (url.username !== "" || url.password !== "") return "it holds user information; credentials belong in the Connection";
  if (url.search !== "" || url.hash !== "" || /[?#]/.test(text)) return "it has a query or fragment";
  const host = url.hostname.toLowerCase();
  if (AWS_HOST.test(host)) {
    if (!AWS_SQS_HOST.test(host)) return `${JSON.stringify(host)} is no SQS endpoint of AWS`;
    if (url.protocol !== "https:") return "an AWS endpoint is reached over https";
  }
  const segments = url.pathname.split("/").slice(1);
  if (segments.length !== 2 || segments.some((s) => s === "")) return "its path is not /<account id>/<queue name>";
  const [account, name] = segments as [string, string];
  if (!/^\d{12}$/.test(account)) return `the account id ${JSON.stringify(account)} is not 12 digits`;
  if (!QUEUE_NAME.test(name)) return `the queue name ${JSON.stringify(name)} is not 1 to 80 letters, digits, "-" or "_" (a FIFO queue's ending in ".fifo")`;
  return undefined;
}
