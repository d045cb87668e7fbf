#!/bin/sh
# Adds context and asks for a permission decision.
cat >/dev/null
printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"%s","additionalContext":"%s"}}\n' "${PERM:-allow}" "reason-${PERM:-allow}" "${CTX:-ctx}"
