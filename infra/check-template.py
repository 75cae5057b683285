#!/usr/bin/env python3
"""Checks what infra/template.yaml promises about privilege, secrets and load, on the template
as CloudFormation will see it: SAM's own translator (from the tools virtualenv) expands it first,
so the roles, policies and event sources SAM adds are checked too, not only what is written.

    .venv-tools/bin/python infra/check-template.py [infra/template.yaml]

Prints one line per check; exits 1 naming every check that failed. `make lint-infra` runs it.
"""

import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

FUNCTIONS = {
    "CommitFunction": "handlers",
    "DeliveryFunction": "handlers",
    "OutboxRelayFunction": "scheduled",
    "ScheduleTickFunction": "scheduled",
    "HousekeepingFunction": "scheduled",
}
# What each function's code does with the queue: it sends (relay, and the immediate send after a
# commit or a tick), and reads its depth (admission control, a backlog told from a lost message,
# no rescue while messages wait).
NEEDS = {
    "CommitFunction": [
        "sqs:SendMessage",
        "sqs:GetQueueAttributes",
        "s3:PutObject",
        "s3:GetObject",
        "s3:ListBucket",
    ],
    "DeliveryFunction": ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"],
    "OutboxRelayFunction": ["sqs:SendMessage", "sqs:GetQueueAttributes"],
    "ScheduleTickFunction": ["sqs:SendMessage"],
    "HousekeepingFunction": [
        "sqs:GetQueueAttributes",
        "s3:ListBucket",
        "s3:GetObject",
        "s3:DeleteObject",
    ],
}
# The functions whose code touches the files' bucket; no other may.
FILES_USERS = {"CommitFunction", "HousekeepingFunction"}
# The managed policies a function may carry: logs, and the network interfaces of a VPC.
ALLOWED_MANAGED = {"AWSLambdaBasicExecutionRole", "AWSLambdaVPCAccessExecutionRole"}
# Variables that hold secrets: never given in clear, only as JADPO_SECRET_<VARIABLE>.
SECRET_VARIABLES = ("DATABASE_URL", "JADPO_SEALING_KEYS")

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


class NoManagedPolicies:
    """The translator asks IAM for managed policy ARNs; offline, none are named in Policies."""

    def load(self):
        return {}


def expanded(path):
    template = yaml_parse(open(path).read())
    for resource in template["Resources"].values():
        if resource.get("Properties", {}).get("CodeUri"):
            # The translator wants an S3 location; where the code comes from is not checked.
            resource["Properties"]["CodeUri"] = "s3://bucket/key"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return template, transform(template, {}, NoManagedPolicies())


def refs(value):
    """The parameters and resources a value names (Ref, Fn::Sub's ${X}, Fn::GetAtt)."""
    found = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref":
                found.add(inner)
            elif key == "Fn::GetAtt":
                found.add(inner[0] if isinstance(inner, list) else inner.split(".")[0])
            elif key == "Fn::Sub":
                text, local = inner if isinstance(inner, list) else (inner, {})
                named = {part.split("}")[0].split(".")[0] for part in text.split("${")[1:]}
                found.update(named - set(local))
                found.update(refs(list(local.values())))
            else:
                found.update(refs(inner))
    elif isinstance(value, list):
        for inner in value:
            found.update(refs(inner))
    return found


def statements(role):
    for policy in role["Properties"].get("Policies", []):
        statement = policy["PolicyDocument"]["Statement"]
        yield from statement if isinstance(statement, list) else [statement]


def actions(statement):
    action = statement.get("Action", [])
    return action if isinstance(action, list) else [action]


def check_roles(resources):
    for name in FUNCTIONS:
        role = resources[name + "Role"]
        managed = {arn.rsplit("/", 1)[-1] for arn in role["Properties"].get("ManagedPolicyArns", [])}
        extra = sorted(managed - ALLOWED_MANAGED)
        check(not extra, f"{name}: no managed policy beyond logs and VPC ({extra or 'none'})")
        granted = [a for statement in statements(role) for a in actions(statement)]
        for need in NEEDS[name]:
            ok = any(a == need or (a.endswith("*") and need.startswith(a[:-1])) for a in granted)
            check(ok, f"{name}: may {need}, which its code does")
        for statement in statements(role):
            scoped = statement.get("Resource") not in ("*", ["*"]) and "NotResource" not in statement
            touchy = [
                a for a in actions(statement) if a.split(":")[0] in ("sqs", "secretsmanager", "s3")
            ]
            if touchy:
                check(scoped, f"{name}: {', '.join(touchy)} on named resources only")
        wild = [a for st in statements(role) for a in actions(st) if a in ("s3:*", "*")]
        check(not wild, f"{name}: no s3:* or * action ({wild or 'none'})")
        if name not in FILES_USERS:
            s3 = [a for st in statements(role) for a in actions(st) if a.startswith("s3:")]
            check(not s3, f"{name}: no access to the files' bucket ({s3 or 'none'})")


def secret_parameters(role):
    found = set()
    for statement in statements(role):
        if any(a.startswith("secretsmanager:") for a in actions(statement)):
            found.update(refs(statement.get("Resource")))
    return found


def check_environment(resources):
    for name, kind in FUNCTIONS.items():
        variables = resources[name]["Properties"].get("Environment", {}).get("Variables", {})
        clear = [v for v in variables if v.startswith(SECRET_VARIABLES) or v.endswith("_HEADER")]
        check(not clear, f"{name}: no secret in clear in its environment ({clear or 'none'})")
        resolved = [k for k, v in variables.items() if "{{resolve:" in str(v)]
        check(not resolved, f"{name}: no secret resolved into its environment ({resolved or 'none'})")
        named = set()
        for key, value in variables.items():
            if key.startswith("JADPO_SECRET_"):
                named.update(refs(value))
        allowed = secret_parameters(resources[name + "Role"])
        check(
            named == allowed,
            f"{name}: may read exactly the secrets it names ({sorted(named)} vs {sorted(allowed)})",
        )
        if kind == "scheduled":
            calls = [v for v in variables if v.startswith("JADPO_CONNECTION_") or "SEALING" in v]
            check(not calls, f"{name}: no connection or sealing key given ({calls or 'none'})")
        tls = variables.get("JADPO_INSECURE_DATABASE_TLS")
        check(
            "UnverifiedDatabase" in str(tls),
            f"{name}: JADPO_INSECURE_DATABASE_TLS set only by the UnverifiedDatabaseTls parameter",
        )


def check_load(template, resources):
    commit = resources["CommitFunction"]["Properties"]
    check("ReservedConcurrentExecutions" in commit, "CommitFunction: reserved concurrency set")
    variables = commit.get("Environment", {}).get("Variables", {})
    check(
        variables.get("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH") == "1",
        "CommitFunction: routes the REST API's paths without their stage",
    )
    mappings = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and "DeliveryQueue" in refs(r["Properties"].get("EventSourceArn"))
    ]
    check(len(mappings) == 1, f"DeliveryQueue: one event source ({len(mappings)})")
    for mapping in mappings:
        maximum = mapping.get("ScalingConfig", {}).get("MaximumConcurrency")
        check(maximum is not None, "DeliveryQueue's event source: MaximumConcurrency set")
        check(
            mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"],
            "DeliveryQueue's event source: reports batch item failures",
        )
    stages = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGateway::Stage"]
    check(len(stages) == 1, f"Api: one stage ({len(stages)})")
    for stage in stages:
        throttled = [
            m
            for m in stage.get("MethodSettings", [])
            if m.get("ResourcePath") == "/*" and m.get("HttpMethod") == "*"
            and "ThrottlingRateLimit" in m and "ThrottlingBurstLimit" in m
        ]
        check(bool(throttled), "Api: every route throttled (rate and burst) before any function")
        logs = stage.get("AccessLogSetting", {})
        check(
            "ApiAccessLogs" in refs(logs.get("DestinationArn"))
            and "$context.identity.sourceIp" in logs.get("Format", ""),
            "Api: access logs, naming each request's source address",
        )
    tls = template["Parameters"].get("UnverifiedDatabaseTls", {})
    check(tls.get("Default") == "no", "UnverifiedDatabaseTls: off unless asked for")


def rate_rules(acl):
    """Each rate-based rule of a web ACL: (its limit's parameter, the paths it is scoped to)."""
    for rule in acl.get("Rules", []):
        rate = rule.get("Statement", {}).get("RateBasedStatement")
        if not rate or "Block" not in rule.get("Action", {}) or rate.get("AggregateKeyType") != "IP":
            continue
        scope = rate.get("ScopeDownStatement", {})
        matches = scope.get("OrStatement", {}).get("Statements", [scope] if scope else [])
        paths = sorted(
            m["ByteMatchStatement"]["SearchString"]
            for m in matches
            if "UriPath" in m.get("ByteMatchStatement", {}).get("FieldToMatch", {})
        )
        yield rate.get("Limit", {}).get("Ref"), paths


def check_edge(template, resources):
    """Per-source limits in a WAF web ACL on the API's stage, stricter on sign-in; the database
    kept off the internet unless a parameter asks."""
    acls = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::WAFv2::WebACL"]
    check(len(acls) == 1 and acls[0].get("Scope") == "REGIONAL", "ApiWebAcl: one regional web ACL")
    rules = dict(rate_rules(acls[0])) if acls else {}
    params = template["Parameters"]
    default = lambda name: params.get(name, {}).get("Default", 0)
    check(rules.get("SourceRateLimit") == [], "ApiWebAcl: every request limited per source address")
    check(
        rules.get("SignInSourceRateLimit") == ["/passkeys", "/sign-in/"],
        "ApiWebAcl: /sign-in/ and /passkeys limited per source address",
    )
    check(
        0 < default("SignInSourceRateLimit") < default("SourceRateLimit"),
        "ApiWebAcl: the sign-in limit is the stricter by default",
    )
    associations = [
        r["Properties"] for r in resources.values() if r["Type"] == "AWS::WAFv2::WebACLAssociation"
    ]
    check(
        len(associations) == 1 and "Api" in refs(associations[0].get("ResourceArn"))
        and "ApiWebAcl" in refs(associations[0].get("WebACLArn")),
        "ApiWebAcl: associated with the API's stage",
    )
    public = params.get("PublicDatabaseEndpoint", {})
    check(public.get("Default") == "no", "PublicDatabaseEndpoint: private unless asked for")
    rule = template.get("Rules", {}).get("PrivateDatabase", {})
    condition = rule.get("RuleCondition", {}).get("Fn::Equals", [])
    asserted = [refs(a.get("Assert")) for a in rule.get("Assertions", [])]
    check(
        {"Ref": "PublicDatabaseEndpoint"} in condition and "no" in condition
        and {"SubnetIds"} in asserted and {"SecurityGroupIds"} in asserted,
        "Rules: no deployment without private subnets and security groups unless asked for",
    )


def alarm_metrics(alarm):
    p = alarm["Properties"]
    if "MetricName" in p:
        yield p["Namespace"], p["MetricName"], refs(p.get("Dimensions"))
    for metric in p.get("Metrics", []):
        stat = metric.get("MetricStat", {}).get("Metric")
        if stat:
            yield stat["Namespace"], stat["MetricName"], refs(stat.get("Dimensions"))


def api_alarms(resources):
    """(namespace, metric, dimensions as written) of each single-metric alarm."""
    for r in resources.values():
        p = r.get("Properties", {})
        if r["Type"] == "AWS::CloudWatch::Alarm" and "MetricName" in p:
            yield p["Namespace"], p["MetricName"], p.get("Dimensions", [])


def check_alarms(resources):
    watched = [m for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm" for m in alarm_metrics(r)]

    def covered(namespace, metric, target):
        return any(n == namespace and m == metric and target in d for n, m, d in watched)

    names = [
        r["Properties"].get("Name")
        for r in resources.values()
        if r["Type"] == "AWS::ApiGateway::RestApi"
    ]
    check(
        any(
            n == "AWS/ApiGateway" and m == "5XXError" and any(
                dim.get("Name") == "ApiName" and dim.get("Value") in names
                for dim in dims
            )
            for n, m, dims in api_alarms(resources)
        ),
        "alarm: the API's 5xx answers (by its name)",
    )
    check(
        covered("AWS/SQS", "ApproximateAgeOfOldestMessage", "DeliveryQueue"),
        "alarm: the delivery queue's oldest message",
    )
    check(covered("AWS/SQS", "ApproximateNumberOfMessagesVisible", "DeadLetterQueue"), "alarm: the DLQ")
    for name in FUNCTIONS:
        check(covered("AWS/Lambda", "Errors", name), f"alarm: {name}'s errors")
        check(covered("AWS/Lambda", "Throttles", name), f"alarm: {name}'s throttles")


def check_files_bucket(resources):
    """The files' bucket is private, encrypted, unversioned (deleting frees and erases), kept
    with the stack deleted, and reached over TLS only."""
    bucket = resources["FilesBucket"]
    props = bucket["Properties"]
    block = props.get("PublicAccessBlockConfiguration", {})
    flags = ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
    check(all(block.get(f) is True for f in flags), "FilesBucket: every public access blocked")
    rules = props.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration", [])
    check(bool(rules), "FilesBucket: encrypted at rest")
    versioning = props.get("VersioningConfiguration", {}).get("Status")
    check(versioning in (None, "Suspended"), f"FilesBucket: not versioned ({versioning})")
    check(bucket.get("DeletionPolicy") == "Retain", "FilesBucket: kept when the stack goes")
    policy = resources["FilesBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    tls = any(
        st.get("Effect") == "Deny"
        and st.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
        for st in policy
    )
    check(tls, "FilesBucket: requests without TLS denied")
    check_files_cors(props.get("CorsConfiguration"))


def check_files_cors(cors):
    """Browsers reach the bucket only from the origins the operator names, only to PUT and GET
    through presigned URLs; without origins, not at all."""
    branches = cors.get("Fn::If", []) if isinstance(cors, dict) else []
    check(len(branches) == 3, "FilesBucket: CORS only when FilesCorsOrigins names origins")
    if len(branches) != 3:
        return
    check(branches[2] == {"Ref": "AWS::NoValue"}, "FilesBucket: no CORS without origins")
    for rule in branches[1].get("CorsRules", []):
        origins = rule.get("AllowedOrigins")
        check(origins == {"Ref": "FilesCorsOrigins"}, f"FilesBucket: CORS origins {origins}")
        methods = sorted(rule.get("AllowedMethods", []))
        check(methods == ["GET", "PUT"], f"FilesBucket: CORS methods {methods}")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "infra/template.yaml"
    template, out = expanded(path)
    resources = out["Resources"]
    check_roles(resources)
    check_environment(resources)
    check_load(template, resources)
    check_alarms(resources)
    check_edge(template, resources)
    check_files_bucket(resources)
    if failures:
        print(f"\n{path}: {len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"\n{path}: every check passed")


if __name__ == "__main__":
    main()
