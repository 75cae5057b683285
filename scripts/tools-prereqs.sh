#!/usr/bin/env bash
# Installs the deployment tools into a project-local virtualenv (never the system's), when
# missing: cargo-lambda (with zig, for building Lambda `bootstrap` binaries for arm64 or x86_64),
# cfn-lint and the AWS SAM CLI (which lint and validate infra/template.yaml offline).
set -euo pipefail

venv=.venv-tools
# Exact versions: a deployment tool that changes under the project changes what `make build`
# produces and what `make lint-infra` accepts. Raise them deliberately, here.
pins=(cargo-lambda==1.9.2 cfn-lint==1.58.0 aws-sam-cli==1.170.0)
stamp="$venv/.pins"
if [ -x "$venv/bin/cargo-lambda" ] && [ -x "$venv/bin/cfn-lint" ] && [ -x "$venv/bin/sam" ] \
  && [ "$(cat "$stamp" 2>/dev/null)" = "${pins[*]}" ]; then
  exit 0
fi
echo "tools-prereqs: installing ${pins[*]} into $venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
echo "${pins[*]}" > "$stamp"
