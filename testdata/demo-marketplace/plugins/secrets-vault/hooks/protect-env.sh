#!/bin/sh
# Blocks (exit 2) any Edit/Write whose file_path is a .env file.
input=$(cat)
case "$input" in
*'"file_path"'*'.env"'* | *'"file_path"'*'.env.'*)
	echo "secrets-vault: editing .env files is blocked; store secrets in the vault instead" >&2
	exit 2 ;;
esac
exit 0
