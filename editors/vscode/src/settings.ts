// Made by `python -m fimlsp.settings write` from the declaration of fimlsp's settings
// (fimlsp/settings): do not edit. The settings the language server takes, in its order, sent under
// these keys.
export const SERVER_SETTINGS = [
  "model",
  "modelServer",
  "device",
  "singleLine",
  "alternatives",
  "cache",
  "mode",
  "maxTokens",
  "topK",
  "timeBudget",
  "sizeBudget",
  "scope",
  "loopRepeats",
  "inventedFinish",
  "attempts",
  "names",
  "members",
  "memberUsage",
  "calls",
  "searchBudget",
  "context",
  "contextExclude",
] as const;
