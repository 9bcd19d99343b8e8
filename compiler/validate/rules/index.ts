import { CredentialInTextRule } from "./CredentialInTextRule.js";
import { DagTagRule } from "./DagTagRule.js";
import { FreshnessPolicyRule } from "./FreshnessPolicyRule.js";
import { IdDomainRule } from "./IdDomainRule.js";
import { KnownPlaceholderRule } from "./KnownPlaceholderRule.js";
import { ImplementedProducerRule } from "./ImplementedProducerRule.js";
import { IngestionModeShapeRule } from "./IngestionModeShapeRule.js";
import { NestingDepthRule } from "./NestingDepthRule.js";
import { PiiLegalBasisRule } from "./PiiLegalBasisRule.js";
import { ProjectPathRule } from "./ProjectPathRule.js";
import { QualityRuleShapeRule } from "./QualityRuleShapeRule.js";
import { ReservedExtraKeyRule } from "./ReservedExtraKeyRule.js";
import { RequirePassedTriggerRule } from "./RequirePassedTriggerRule.js";
import { ReservedNameRule } from "./ReservedNameRule.js";
import type { DocumentRule } from "./rule.js";
import { TemplateFreeTextRule } from "./TemplateFreeTextRule.js";
import { TriggerShapeRule } from "./TriggerShapeRule.js";
import { UniqueNamesRule } from "./UniqueNamesRule.js";
import { ValidDurationRule } from "./ValidDurationRule.js";
import { ValidScheduleRule } from "./ValidScheduleRule.js";
import { ValidUriRule } from "./ValidUriRule.js";
import { VerbatimNumberRule } from "./VerbatimNumberRule.js";

/** Every document rule, in the order they run (order does not change the sorted report). */
export const DOCUMENT_RULES: readonly DocumentRule[] = [
  ValidUriRule,
  ReservedNameRule,
  ValidScheduleRule,
  ValidDurationRule,
  FreshnessPolicyRule,
  PiiLegalBasisRule,
  ProjectPathRule,
  UniqueNamesRule,
  QualityRuleShapeRule,
  ReservedExtraKeyRule,
  TriggerShapeRule,
  RequirePassedTriggerRule,
  DagTagRule,
  IdDomainRule,
  CredentialInTextRule,
  NestingDepthRule,
  ImplementedProducerRule,
  IngestionModeShapeRule,
  KnownPlaceholderRule,
  TemplateFreeTextRule,
  VerbatimNumberRule,
];
