#!/usr/bin/env bash
# Installs Hadoop's MiniDFSCluster (hadoop-client-minicluster from Maven Central) and compiles the tiny
# launcher the HDFS storage tier starts. Everything lands in a cache outside the repo, so a fresh clone
# reuses it; idempotent and quick once done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${TABLEKEEPER_HADOOP_VERSION:-3.4.2}"
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/hdfs/$version"
stamp="$cache/.installed-$(cat "$here/MiniHdfs.java" "$0" | sha256sum | cut -c1-16)"
[ -f "$stamp" ] && exit 0
command -v mvn >/dev/null && command -v javac >/dev/null || { echo "hdfs tier: needs mvn and javac" >&2; exit 1; }
rm -rf "$cache/lib" "$cache/classes"
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
    <!-- WebHDFS's Jersey needs JAXB, which Java 11+ no longer ships -->
    <dependency>
      <groupId>javax.xml.bind</groupId><artifactId>jaxb-api</artifactId><version>2.3.1</version>
    </dependency>
    <dependency>
      <groupId>org.glassfish.jaxb</groupId><artifactId>jaxb-runtime</artifactId><version>2.3.9</version>
    </dependency>
    <!-- the cluster's warnings and errors on stderr (the test keeps them in a log file) -->
    <dependency>
      <groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version>
    </dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$cache/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/lib"
javac -cp "$cache/lib/*" -d "$cache/classes" "$here/MiniHdfs.java"
rm -f "$cache"/.installed-*
touch "$stamp"
