import type { LinkRule } from "./rule.js";

/**
 * The config's URI template has only `{layer}`, `{domain}` and `{name}`, needs both `{domain}` and
 * `{name}`, and expands to a valid Asset URI for every dataset that names no `uri`. Why: every such
 * dataset's Asset URI comes from it, so one bad template would make every one of them invalid or
 * identical. The asset table checks it (it refuses the datasets a bad template would name); this
 * rule reports what it found, once at the template and once per dataset whose expansion fails.
 */
export const ValidUriTemplateRule: LinkRule = {
  name: "ValidUriTemplateRule",
  check(state, context) {
    for (const finding of state.table.templateFindings) context.report(finding);
  },
};
