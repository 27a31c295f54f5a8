#!/usr/bin/env bash
# Installs Apache Hive's standalone metastore for the catalogs tier (tests/catalogs): the metastore
# server and its dependencies from Maven Central (~/.m2), the Derby schema scripts of its binary
# distribution (also served there, classifier "bin"), a Derby database initialised once by the
# metastore's own schematool (the template every test session copies), and the tiny launcher.
# Everything lands in a cache outside the repo; idempotent, and instant once done.
# Prints "hms <cache directory>".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${TABLEKEEPER_HIVE_METASTORE_VERSION:-4.0.1}"
hadoop=3.3.6
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/catalogs/hms/$version"
stamp="$cache/.installed-$(cat "$here/HiveMetastoreLauncher.java" "$0" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "hms $cache"
  exit 0
fi
for tool in mvn javac java tar; do
  command -v "$tool" >/dev/null || { echo "hms: $tool not found (Java 17 and Maven are needed)" >&2; exit 1; }
done
rm -rf "$cache/classes" "$cache/home" "$cache/template" "$cache/dist"
mkdir -p "$cache/classes" "$cache/home" "$cache/template"
# The metastore declares Hadoop optional: Hadoop 3.3.6 (its own build's version) is added here, and
# what would clash with it is excluded (JDK 8's tools.jar, log4j 1 next to log4j 2's bridge, the
# shaded Hadoop client API that ORC pulls in).
cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tablekeeper.catalogs</groupId><artifactId>hive-metastore</artifactId><version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.hive</groupId><artifactId>hive-standalone-metastore-server</artifactId><version>$version</version>
      <exclusions>
        <exclusion><groupId>jdk.tools</groupId><artifactId>jdk.tools</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
        <exclusion><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId><version>$hadoop</version>
      <exclusions>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs-client</artifactId><version>$hadoop</version></dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId><version>$hadoop</version>
      <exclusions>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
      </exclusions>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-mapreduce-client-core</artifactId><version>$hadoop</version>
      <exclusions>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId></exclusion>
        <exclusion><groupId>ch.qos.reload4j</groupId><artifactId>reload4j</artifactId></exclusion>
      </exclusions>
    </dependency>
  </dependencies>
</project>
POM
rm -f "$cache/deps.txt"
mvn -q -B -f "$cache/pom.xml" dependency:build-classpath -Dmdep.outputFile="$cache/deps.txt" -Dmdep.includeScope=runtime >&2 \
  || { echo "hms: Maven could not resolve hive-standalone-metastore-server $version" >&2; exit 1; }
mvn -q -B -f "$cache/pom.xml" dependency:copy -Dmdep.stripVersion=false \
  -Dartifact="org.apache.hive:hive-standalone-metastore-server:$version:tar.gz:bin" -DoutputDirectory="$cache/dist" >&2 \
  || { echo "hms: Maven could not fetch the metastore's binary distribution (for its Derby schema scripts)" >&2; exit 1; }
tar xzf "$cache/dist/hive-standalone-metastore-server-$version-bin.tar.gz" -C "$cache/home" --strip-components=1 \
  "apache-hive-metastore-$version-bin/scripts/metastore/upgrade/derby"
rm -rf "$cache/dist"
javac -nowarn -d "$cache/classes" -cp "$(cat "$cache/deps.txt")" "$here/HiveMetastoreLauncher.java"
# The schema, created once by the metastore's own schematool (the transaction and lock tables
# included, which datanucleus.schema.autoCreateAll would not create).
if ! (cd "$cache/template" && METASTORE_HOME="$cache/home" java -Dderby.stream.error.file="$cache/template/derby.log" \
      -cp "$(cat "$cache/deps.txt")" org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool \
      -initSchema -dbType derby -url "jdbc:derby:;databaseName=$cache/template/metastore_db;create=true" \
      -driver org.apache.derby.jdbc.EmbeddedDriver -userName APP -passWord mine >"$cache/template/schematool.log" 2>&1); then
  tail -20 "$cache/template/schematool.log" >&2
  echo "hms: the metastore's schematool could not initialise the Derby schema" >&2
  exit 1
fi
rm -f "$cache"/.installed-*
touch "$stamp"
echo "hms $cache"
