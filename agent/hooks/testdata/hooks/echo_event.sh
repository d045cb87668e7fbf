#!/bin/sh
# Copies the event and the plugin environment to $HOOK_OUT.
{
  cat
  echo
  echo "CLAUDE_PLUGIN_ROOT=$CLAUDE_PLUGIN_ROOT"
  echo "WHARF_PLUGIN_ROOT=$WHARF_PLUGIN_ROOT"
  echo "CLAUDE_PLUGIN_DATA=$CLAUDE_PLUGIN_DATA"
  echo "CLAUDE_PROJECT_DIR=$CLAUDE_PROJECT_DIR"
} > "$HOOK_OUT"
