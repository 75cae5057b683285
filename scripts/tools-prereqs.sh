#!/usr/bin/env bash
# Installs the deployment tools into a project-local virtualenv (never the system's), when
# missing: cargo-lambda (with zig, for building Lambda `bootstrap` binaries for arm64 or x86_64),
# cfn-lint and the AWS SAM CLI (which lint and validate infra/template.yaml offline).
set -euo pipefail

venv=.venv-tools
if [ -x "$venv/bin/cargo-lambda" ] && [ -x "$venv/bin/cfn-lint" ] && [ -x "$venv/bin/sam" ]; then
  exit 0
fi
echo "tools-prereqs: installing cargo-lambda, cfn-lint and aws-sam-cli into $venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "cargo-lambda>=1.8,<2" "cfn-lint>=1,<2" "aws-sam-cli>=1.140,<2"
