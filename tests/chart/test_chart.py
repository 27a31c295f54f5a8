"""The Helm chart ``charts/tablekeeper``: lint, values schema, rendering (helm-python-sdk: Helm's Go
SDK in a bundled shared library, offline, no helm binary), Kubernetes schema validation of every
rendered manifest (kubernetes-validate: the API's OpenAPI schemas for each Kubernetes version,
shipped in the package, strict mode), the Deployment's contract with the image and the CLI, the
CRD copies, and RBAC: the rendered roles and bindings grant exactly what
``tablekeeper.operator.rbac`` lists, where it lists it, with no wildcards.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tablekeeper.cli.main import cli
from tablekeeper.operator import rbac
from tablekeeper.operator.runs import spark as sparkruns
from tablekeeper.operator.settings import OperatorConfig, SparkConfig
from tablekeeper.spark import job_request, k8s_manifests
from tests.support.k8s import CRD_DIR, REPO_ROOT

CHART = REPO_ROOT / "charts" / "tablekeeper"
RELEASE, NAMESPACE = "tk", "tablekeeper-system"
KUBE_VERSIONS = ["1.29.0", kubernetes_validate.utils.latest_version()]

SCENARIOS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "namespaced": {"watchNamespaces": ["sales", "finance"]},
    "namespaced-incl-release": {"watchNamespaces": ["sales", NAMESPACE]},
    "job-namespaces": {"jobNamespaces": ["spark-jobs", "batch-jobs"], "watchNamespaces": ["sales"]},
    "spark": {"jobNamespaces": ["spark-jobs", "batch-jobs"],
              "spark": {"image": "registry.example.com/tablekeeper-spark:0.1.0", "sparkVersion": "3.5.3",
                        "namespace": "batch-jobs", "serviceAccount": "spark-driver", "engine": "SparkOperator",
                        "detectTtlSeconds": 60, "threshold": 2_000_000, "resultsPrefix": "s3://lake/tk-results",
                        "ttlSecondsAfterFinished": 3600,
                        "rbac": {"create": True, "serviceAccountAnnotations": {"eks.amazonaws.com/role-arn": "arn"}}}},
    "spark-default-namespace": {"spark": {"image": "registry.example.com/tablekeeper-spark:0.1.0"},
                                "watchNamespaces": ["sales"]},
    "operator-switches": {"operator": {"materializePolicyTags": True, "logFormat": "json",
                                       "protectedTableOptions": ["bucket", "snapshot.time-retained"]}},
    "no-metrics-custom-image": {"prometheus": {"metrics": {"enable": False, "port": 9090, "portName": "metrics"}},
                                "image": {"registry": "registry.example.com", "repository": "data/tablekeeper",
                                          "tag": "0.1.0-rc1", "pullPolicy": "Always",
                                          "pullSecrets": [{"name": "regcred"}]},
                                "serviceAccount": {"name": "tk-operator"}, "fullnameOverride": "tablekeeper"},
}


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object the chart renders (NOTES.txt excluded)."""
    rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            objects += [doc for doc in yaml.safe_load_all(text) if doc]
    return objects


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [obj for obj in objects if obj["kind"] == kind]
    return found


def spark_driver(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Spark driver's ServiceAccount, Role and RoleBinding (templates/spark-rbac.yaml)."""
    return [obj for obj in objects if obj["metadata"]["labels"]["app.kubernetes.io/component"] == "spark-driver"]


def operator_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything but the Spark driver's objects."""
    driver = spark_driver(objects)
    return [obj for obj in objects if obj not in driver]


def test_helm_is_the_bundled_library_not_a_binary() -> None:
    assert helm.helm_sdk_version().startswith("v4.")
    assert Path(helm.library_path).is_relative_to(Path(helm.__file__).parent)


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_lint(kube_version: str) -> None:
    report = helm.lint(CHART, strict=True, kube_version=f"v{kube_version}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == [], report["messages"]


def test_chart_metadata_matches_the_package(chart: helm.Chart) -> None:
    assert chart.metadata["appVersion"] == importlib.metadata.version("tablekeeper")
    assert chart.metadata["kubeVersion"] == ">=1.29.0-0"  # CEL validation rules are GA from 1.29


def test_values_schema(chart: helm.Chart) -> None:
    chart.validate_schema({})
    for values in SCENARIOS.values():
        chart.validate_schema(values)
    for bad in ({"replicas": 2}, {"watchNamespaces": ["Sales"]}, {"image": {"pullPolicy": "Sometimes"}},
                {"prometheus": {"metrics": {"enable": True, "port": 0, "portName": "metrics"}}},
                {"operator": {"materializePolicyTags": "yes"}}, {"operator": {"protectedTableOptions": "bucket"}},
                {"operator": {"protectedTableOptions": ["bucket,path"]}}, {"operator": {"unknown": 1}},
                {"operator": {"logFormat": "yaml"}},
                {"spark": {"rbac": {"create": "true"}}}, {"spark": {"serviceAccount": "Spark_Driver"}}):
        with pytest.raises(helm.HelmValuesError):
            chart.validate_schema(bad)
        with pytest.raises(helm.HelmError):
            chart.render(bad, name=RELEASE, namespace=NAMESPACE)


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_rendered_manifests_are_valid_kubernetes_objects(chart: helm.Chart, scenario: str, kube_version: str) -> None:
    objects = render(chart, SCENARIOS[scenario])
    assert {obj["kind"] for obj in objects} >= {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                                "Role", "RoleBinding"}
    for obj in objects:
        kubernetes_validate.validate(obj, kube_version, strict=True)
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "tablekeeper"
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"]


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_chart_crds_are_valid_and_copies_of_crds(chart: helm.Chart, kube_version: str) -> None:
    packaged = {Path(crd["filename"]).name: crd["data"] for crd in chart.crds}
    expected = {path.name: path.read_text(encoding="utf-8") for path in sorted(CRD_DIR.glob("*.yaml"))}
    assert packaged.keys() == expected.keys()
    for name, text in packaged.items():
        assert text == expected[name], f"charts/tablekeeper/crds/{name} differs from crds/{name}"
        kubernetes_validate.validate(yaml.safe_load(text), kube_version, strict=True)


def _operator_options() -> set[str]:
    command = cli.commands["operator"]
    return {opt for param in command.params for opt in param.opts}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_deployment(chart: helm.Chart, scenario: str) -> None:
    values = SCENARIOS[scenario]
    objects = operator_objects(render(chart, values))
    deployment = one(objects, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    [container] = pod["containers"]
    assert "command" not in container  # the image's entrypoint is `tablekeeper operator`
    args = container["args"]
    assert {arg.split("=", 1)[0] for arg in args} <= _operator_options()
    assert [a.split("=", 1)[1] for a in args if a.startswith("--namespace=")] == values.get("watchNamespaces", [])
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    liveness = next(a for a in args if a.startswith("--liveness="))
    assert liveness == f"--liveness=http://0.0.0.0:{ports['health']}/healthz"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    metrics_port = int(next(a for a in args if a.startswith("--metrics-port=")).split("=", 1)[1])
    services = [obj for obj in objects if obj["kind"] == "Service"]
    if values.get("prometheus", {}).get("metrics", {}).get("enable", True):
        assert ports["metrics"] == metrics_port == 9090
        [service] = services
        assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()
        assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    else:
        assert metrics_port == 0 and "metrics" not in ports and not services
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    service_account = one(objects, "ServiceAccount")
    assert pod["serviceAccountName"] == service_account["metadata"]["name"]
    image = values.get("image", {})
    expected_image = (f"{image['registry']}/{image['repository']}:{image['tag']}" if image
                      else f"tablekeeper:{importlib.metadata.version('tablekeeper')}")
    assert container["image"] == expected_image


def _effective_grants(objects: list[dict[str, Any]], service_account: tuple[str, str]) -> set[rbac.Grant]:
    """(namespace or None, group, resource, verb) that the bindings give ``service_account``."""
    roles = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
             for obj in objects if obj["kind"] in ("ClusterRole", "Role")}
    used: set[tuple[str, str | None, str]] = set()
    grants: set[rbac.Grant] = set()
    for binding in (obj for obj in objects if obj["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        subjects = [(s["kind"], s["namespace"], s["name"]) for s in binding["subjects"]]
        assert subjects == [("ServiceAccount", *service_account)], binding["metadata"]["name"]
        where = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        key = (ref["kind"], where if ref["kind"] == "Role" else None, ref["name"])
        assert key in roles, f"{binding['metadata']['name']} refers to a missing {key}"
        used.add(key)
        for rule in roles[key]["rules"]:
            assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule  # no nonResourceURLs
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [""]:
                            assert "*" not in (group, resource, verb, name), rule
                            grants.add((where, group, resource, verb, name))
    assert used == set(roles), f"unbound roles: {set(roles) - used}"
    return grants


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_rbac_grants_exactly_what_the_operator_needs(chart: helm.Chart, scenario: str) -> None:
    values = SCENARIOS[scenario]
    objects = operator_objects(render(chart, values))
    service_account = one(objects, "ServiceAccount")["metadata"]["name"]
    granted = _effective_grants(objects, (NAMESPACE, service_account))
    needed = rbac.required_grants(operator_namespace=NAMESPACE, watch_namespaces=values.get("watchNamespaces", ()),
                                  job_namespaces=values.get("jobNamespaces", ()))
    assert granted - needed == set(), "granted but not needed"
    assert needed - granted == set(), "needed but not granted"


def test_rbac_and_service_account_can_be_external(chart: helm.Chart) -> None:
    objects = render(chart, {"rbac": {"create": False}, "serviceAccount": {"create": False, "name": "ops"}})
    assert {obj["kind"] for obj in objects} == {"Deployment", "Service"}
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "ops"
    with pytest.raises(helm.HelmError, match="serviceAccount.name is required"):
        render(chart, {"serviceAccount": {"create": False}})


def test_dockerfile_matches_the_chart() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.MULTILINE)
    assert re.search(r"pip install[^\n]*\"?\.\[operator\]\"?", dockerfile)
    assert re.search(r'^ENTRYPOINT \["tablekeeper", "operator"\]$', dockerfile, re.MULTILINE)
    assert re.search(r"^USER 65532:65532$", dockerfile, re.MULTILINE)  # = podSecurityContext.runAsUser
    assert re.search(r"^EXPOSE 8080 9090$", dockerfile, re.MULTILINE)
    # the native manifest decoder is built (a compiler before the install) and checked in the image
    install = dockerfile.index('pip install ".[operator]"')
    assert -1 < dockerfile.find("apt-get install -y --no-install-recommends gcc") < install
    assert dockerfile.find("import tablekeeper.core.paimon.manifests._avro_native") > install


def test_the_job_image_is_what_the_chart_and_the_launched_objects_run(chart: helm.Chart) -> None:
    """docker/spark-job.Dockerfile cannot be built here (no registry): its steps are checked instead,
    and the SparkApplication and Job the operator would launch with the chart's defaults must run
    exactly the main file, Python and spark-submit it installs, on the Spark version it carries."""
    dockerfile = (REPO_ROOT / "docker" / "spark-job.Dockerfile").read_text(encoding="utf-8")
    [version] = re.findall(r"^ARG SPARK_VERSION=(\S+)$", dockerfile, re.MULTILINE)
    assert re.search(r"^FROM apache/spark:\$\{SPARK_VERSION\}-python3$", dockerfile, re.MULTILINE)
    install = dockerfile.index('/usr/bin/python3 -m pip install ".[stores]"')
    [main_file] = re.findall(r"print\(m\.__file__\)'\)\" (\S+) ", dockerfile)
    assert dockerfile.index("ln -s ") > install and "import tablekeeper.spark.__main__ as m" in dockerfile
    assert dockerfile.find("test -x /opt/spark/bin/spark-submit") > install
    assert dockerfile.find("import tablekeeper.spark.job_request") > install  # the package imports in the image
    assert re.search(r"^USER 185$", dockerfile, re.MULTILINE)  # apache/spark's own user

    env = _operator_env(render(chart, {"spark": {"image": "registry.example.com/tablekeeper-spark:0.1.0"}}))
    config = OperatorConfig.from_env(env).spark
    assert config.spark_version == version
    assert config.paths == k8s_manifests.JobImage(main_file=main_file, python="/usr/bin/python3",
                                                  spark_submit="/opt/spark/bin/spark-submit")
    request = job_request.JobRequest(operation="expire", warehouse="s3://lake/wh", table="db.t")
    common = {"request": request, "name": "tk-12345678-exp-abcd", "namespace": "jobs", "owner_name": "run",
              "owner_uid": "uid", "image": config.image, "service_account": config.service_account,
              "active_deadline_seconds": 3600, "spark_version": config.spark_version, "paths": config.paths}
    app = sparkruns.launch_manifest(engine="SparkOperator", **common)["spec"]
    assert app["mainApplicationFile"] == f"local://{main_file}" and app["sparkVersion"] == version
    assert app["sparkConf"]["spark.pyspark.python"] == "/usr/bin/python3"
    for side in ("driver", "executor"):
        assert {"name": "PYSPARK_PYTHON", "value": "/usr/bin/python3"} in app[side]["env"]
    [container] = sparkruns.launch_manifest(engine="SparkJob", **common)["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[0] == "/opt/spark/bin/spark-submit" and command[command.index(main_file) + 1:] == request.to_args()
    assert "spark.pyspark.python=/usr/bin/python3" in command
    # another image says where its files are
    other = OperatorConfig.from_env(_operator_env(render(chart, {"spark": {
        "image": "registry.example.com/own-spark:1", "sparkVersion": "3.5.5", "mainFile": "local:///app/tk_job.py",
        "python": "/opt/venv/bin/python", "sparkSubmit": "/usr/lib/spark/bin/spark-submit"}}))).spark
    assert other.paths == k8s_manifests.JobImage("local:///app/tk_job.py", "/opt/venv/bin/python",
                                                 "/usr/lib/spark/bin/spark-submit")
    for bad in ({"spark": {"mainFile": "job.py"}}, {"spark": {"python": "python3"}}):
        with pytest.raises(helm.HelmValuesError):
            chart.validate_schema(bad)


def _operator_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    [container] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def test_spark_values_reach_the_operator_settings(chart: helm.Chart) -> None:
    env = _operator_env(render(chart, SCENARIOS["spark"]))
    assert OperatorConfig.from_env(env).spark == SparkConfig(
        image="registry.example.com/tablekeeper-spark:0.1.0", spark_version="3.5.3", namespace="batch-jobs",
        service_account="spark-driver", auto_engine="SparkOperator", detect_ttl=60, threshold=2_000_000,
        results="s3://lake/tk-results", ttl_seconds=3600)
    # defaults: Spark runs off; launches would go to the first job namespace (where RBAC allows them)
    defaults = OperatorConfig.from_env(_operator_env(render(chart))).spark
    assert not defaults.enabled and defaults.namespace == NAMESPACE and defaults.auto_engine == "Detect"
    assert defaults.threshold == 500_000 and defaults.detect_ttl == 300
    jobs = OperatorConfig.from_env(_operator_env(render(chart, SCENARIOS["job-namespaces"]))).spark
    assert jobs.namespace == "spark-jobs"


def test_spark_namespace_must_be_a_job_namespace(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmError, match="must be one of the job namespaces"):
        render(chart, {"jobNamespaces": ["spark-jobs"], "spark": {"namespace": "elsewhere"}})
    for bad in ({"spark": {"engine": "Spark"}}, {"spark": {"threshold": -1}}, {"spark": {"namespace": "Bad_ns"}}):
        with pytest.raises(helm.HelmValuesError):
            chart.validate_schema(bad)


def test_operator_values_reach_the_operator_settings(chart: helm.Chart) -> None:
    config = OperatorConfig.from_env(_operator_env(render(chart, SCENARIOS["operator-switches"])))
    assert config.materialize_policy_tags is True
    assert config.protected_table_options == frozenset({"bucket", "snapshot.time-retained"})
    defaults = OperatorConfig.from_env(_operator_env(render(chart)))
    assert defaults.materialize_policy_tags is False and defaults.protected_table_options == frozenset()
    env = _operator_env(render(chart))
    assert (env["TABLEKEEPER_MATERIALIZE_POLICY_TAGS"], env["TABLEKEEPER_PROTECTED_TABLE_OPTIONS"]) == ("false", "")
    one_option = _operator_env(render(chart, {"operator": {"protectedTableOptions": ["bucket"]}}))
    assert OperatorConfig.from_env(one_option).protected_table_options == frozenset({"bucket"})


def test_log_format_value_reaches_the_operator(chart: helm.Chart) -> None:
    """``operator.logFormat`` is the operator's ``--log-format``, as the CLI parses the rendered args."""
    command = cli.commands["operator"]
    for values, expected in (({}, "text"), (SCENARIOS["operator-switches"], "json")):
        [container] = one(render(chart, values), "Deployment")["spec"]["template"]["spec"]["containers"]
        with command.make_context("operator", list(container["args"])) as ctx:
            assert ctx.params["log_format"] == expected


#: What a Spark driver on Kubernetes does in its namespace, and nothing else.
SPARK_DRIVER_GRANTS = {
    *(("", "pods", verb) for verb in ("create", "get", "list", "watch", "delete", "deletecollection")),
    *(("", resource, verb) for resource in ("configmaps", "services")
      for verb in ("create", "get", "delete", "deletecollection")),
}


@pytest.mark.parametrize(("scenario", "namespace", "account"),
                         [("spark", "batch-jobs", "spark-driver"),
                          ("spark-default-namespace", NAMESPACE, "tablekeeper-spark")])
def test_spark_driver_service_account_and_role(chart: helm.Chart, scenario: str, namespace: str,
                                               account: str) -> None:
    objects = render(chart, SCENARIOS[scenario])
    driver = spark_driver(objects)
    assert sorted(obj["kind"] for obj in driver) == ["Role", "RoleBinding", "ServiceAccount"]
    assert {obj["metadata"]["namespace"] for obj in driver} == {namespace}
    service_account = one(driver, "ServiceAccount")
    assert service_account["metadata"]["name"] == account
    if scenario == "spark":
        assert service_account["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": "arn"}
    # the driver runs as that account: the operator launches with TABLEKEEPER_SPARK_SERVICE_ACCOUNT
    spark = OperatorConfig.from_env(_operator_env(objects)).spark
    assert (spark.namespace, spark.service_account) == (namespace, account)
    role, binding = one(driver, "Role"), one(driver, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    granted = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no resourceNames, no URLs
        granted |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert granted == SPARK_DRIVER_GRANTS
    assert not [g for g in granted if "*" in g or g[1] in ("secrets", "roles", "rolebindings", "serviceaccounts")]
    # the operator's own grants stay exactly rbac.py's (checked per scenario above); the driver's
    # account is bound to nothing else
    bound = [obj for obj in objects if obj["kind"] in ("RoleBinding", "ClusterRoleBinding")
             and any(s["name"] == account and s["namespace"] == namespace for s in obj["subjects"])]
    assert bound == [binding]


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_spark_rbac_lints_and_validates(kube_version: str, chart: helm.Chart) -> None:
    values = SCENARIOS["spark"]
    report = helm.lint(CHART, values, strict=True, kube_version=f"v{kube_version}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == [], report["messages"]
    for obj in spark_driver(render(chart, values)):
        kubernetes_validate.validate(obj, kube_version, strict=True)


def test_spark_driver_objects_only_when_spark_runs_are_on(chart: helm.Chart) -> None:
    assert spark_driver(render(chart)) == []  # no spark.image: Spark runs are off
    values = {"spark": {"image": "registry.example.com/tablekeeper-spark:0.1.0", "rbac": {"create": False}}}
    assert spark_driver(render(chart, values)) == []
