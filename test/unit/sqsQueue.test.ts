import { describe, expect, it } from "vitest";
import { sqsQueueUrlProblem } from "../../compiler/support/sqsQueue.js";

describe("sqsQueueUrlProblem", () => {
  it("accepts AWS queue URLs, FIFO names, the legacy host and an emulator's endpoint", () => {
    for (const url of [
      "https://sqs.eu-central-1.amazonaws.com/123456789012/orders",
      "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders_2",
      "https://us-east-1.queue.amazonaws.com/123456789012/orders.fifo",
      "http://127.0.0.1:5000/123456789012/orders-exports",
      `https://sqs.us-east-1.amazonaws.com/123456789012/${"a".repeat(80)}`,
    ]) {
      expect(sqsQueueUrlProblem(url), url).toBeUndefined();
    }
  });

  it("names what is wrong", () => {
    const cases: Array<[string, string]> = [
      ["sqs://orders", "its scheme is \"sqs\", not https"],
      ["orders", "it is not an absolute URL"],
      ["https://key:secret@sqs.us-east-1.amazonaws.com/123456789012/q", "it holds user information; credentials belong in the Connection"],
      ["https://sqs.us-east-1.amazonaws.com/123456789012/q?x=1", "it has a query or fragment"],
      ["https://s3.us-east-1.amazonaws.com/123456789012/q", "\"s3.us-east-1.amazonaws.com\" is no SQS endpoint of AWS"],
      ["http://sqs.us-east-1.amazonaws.com/123456789012/q", "an AWS endpoint is reached over https"],
      ["https://sqs.us-east-1.amazonaws.com/q", "its path is not /<account id>/<queue name>"],
      ["https://sqs.us-east-1.amazonaws.com/123456789012/q/", "its path is not /<account id>/<queue name>"],
      ["https://sqs.us-east-1.amazonaws.com/12345/q", "the account id \"12345\" is not 12 digits"],
      [`https://sqs.us-east-1.amazonaws.com/123456789012/${"a".repeat(81)}`, `the queue name "${"a".repeat(81)}" is not 1 to 80 letters, digits, "-" or "_" (a FIFO queue's ending in ".fifo")`],
      ["https://sqs.us-east-1.amazonaws.com/123456789012/my.queue", `the queue name "my.queue" is not 1 to 80 letters, digits, "-" or "_" (a FIFO queue's ending in ".fifo")`],
    ];
    for (const [url, problem] of cases) expect(sqsQueueUrlProblem(url), url).toBe(problem);
  });
});
