/** Issue severities as people read them: index 0 is severity 1 (critical) … index 4 is 5 (informational). */
export const SEVERITIES = ["critical", "high", "medium", "low", "informational"] as const;
