import { ConsistentDbtProjectRule } from "./ConsistentDbtProjectRule.js";
import { ConsistentExternalAssetRule } from "./ConsistentExternalAssetRule.js";
import { DeadlineNotifierRule } from "./DeadlineNotifierRule.js";
import { ExistingProducerFileRule } from "./ExistingProducerFileRule.js";
import { AlignedPartitionsRule } from "./AlignedPartitionsRule.js";
import { FrequentEnoughCronRule } from "./FrequentEnoughCronRule.js";
import { KnownNotifierRule } from "./KnownNotifierRule.js";
import { KnownOverrideTargetRule } from "./KnownOverrideTargetRule.js";
import { KnownProducerFamilyRule } from "./KnownProducerFamilyRule.js";
import { KnownScheduleRefRule } from "./KnownScheduleRefRule.js";
import { KnownUpstreamRule } from "./KnownUpstreamRule.js";
import { LiveUpstreamRule } from "./LiveUpstreamRule.js";
import { MatchingSchemaVersionRule } from "./MatchingSchemaVersionRule.js";
import { QueueTriggerRule } from "./QueueTriggerRule.js";
import { ReadExternalAssetRule } from "./ReadExternalAssetRule.js";
import type { LinkRule } from "./rule.js";
import { ShortIdentifierRule } from "./ShortIdentifierRule.js";
import { TriggeredLoadRule } from "./TriggeredLoadRule.js";
import { UniqueAssetNameRule } from "./UniqueAssetNameRule.js";
import { UniqueAssetUriRule } from "./UniqueAssetUriRule.js";
import { UniqueConfigKeyRule } from "./UniqueConfigKeyRule.js";
import { UniqueContractIdRule } from "./UniqueContractIdRule.js";
import { UniqueLineageIdentityRule } from "./UniqueLineageIdentityRule.js";
import { ValidUriTemplateRule } from "./ValidUriTemplateRule.js";

/** Every cross-document rule, in the order they run (order does not change the sorted report). */
export const LINK_RULES: readonly LinkRule[] = [
  UniqueConfigKeyRule,
  ValidUriTemplateRule,
  UniqueContractIdRule,
  UniqueAssetNameRule,
  UniqueAssetUriRule,
  UniqueLineageIdentityRule,
  ShortIdentifierRule,
  ConsistentExternalAssetRule,
  KnownProducerFamilyRule,
  ExistingProducerFileRule,
  ConsistentDbtProjectRule,
  KnownScheduleRefRule,
  KnownUpstreamRule,
  LiveUpstreamRule,
  MatchingSchemaVersionRule,
  KnownOverrideTargetRule,
  KnownNotifierRule,
  DeadlineNotifierRule,
  FrequentEnoughCronRule,
  AlignedPartitionsRule,
  TriggeredLoadRule,
  QueueTriggerRule,
  ReadExternalAssetRule,
];
