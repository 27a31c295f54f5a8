#!/usr/bin/env bash
# Installs Hadoop's MiniDFSCluster (hadoop-client-minicluster from Maven Central) and compiles the tiny
# launcher the HDFS storage tier starts. Everything lands in a cache outside the repo, so a fresh clone
# reuses it; idempotent and quick once done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${TABLEKEEPER_HADOOP_VERSION:-3.4.2}"
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/hdfs/$version"
stamp="$cache/.installed-$(sha256sum "$here/MiniHdfs.java" | cut -c1-16)"
[ -f "$stamp" ] && exit 0
command -v mvn >/dev/null && command -v javac >/dev/null || { echo "hdfs tier: needs mvn and javac" >&2; exit 1; }
mkdir -p "$cache/lib" "$cache/classes"
cat > "$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tablekeeper</groupId><artifactId>minihdfs</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-minicluster</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId>
      <version>$version</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/lib"
javac -cp "$cache/lib/*" -d "$cache/classes" "$here/MiniHdfs.java"
rm -f "$cache"/.installed-*
touch "$stamp"
