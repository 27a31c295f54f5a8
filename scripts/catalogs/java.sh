#!/usr/bin/env bash
# Installs the Java side of the catalogs tier (tests/catalogs) into a cache outside the repo:
#  - rest/: Apache Paimon's own REST catalog server (RESTCatalogServer, in paimon-core's "tests"
#    jar, with okhttp's MockWebServer it needs) and RestCatalogServerLauncher.java;
#  - driver/: the Java Paimon driver of scripts/javapaimon (PaimonDriver.java) compiled against
#    paimon-bundle plus the PostgreSQL and SQLite JDBC drivers, so that Java Paimon writes and
#    reads through a JDBC catalog (JdbcCatalog) and a REST catalog (RESTCatalog).
# Maven resolves everything (~/.m2); idempotent, and instant once done (the stamps hash the sources).
# Prints "java <cache directory>" (rest/classpath and driver/classpath in it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
paimon="${TABLEKEEPER_CATALOGS_PAIMON_VERSION:-1.4.2}"
mockwebserver=4.12.0
postgresql_jdbc=42.7.14
sqlite_jdbc=3.54.1.0
hadoop=3.3.6
slf4j=2.0.17
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/catalogs/java/$paimon"
for tool in mvn javac java; do
  command -v "$tool" >/dev/null || { echo "java: $tool not found (Java 17 and Maven are needed)" >&2; exit 1; }
done

common_deps() {
  cat <<DEPS
    <dependency><groupId>org.apache.paimon</groupId><artifactId>paimon-bundle</artifactId><version>$paimon</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId><version>$hadoop</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId><version>$hadoop</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$slf4j</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>$slf4j</version></dependency>
DEPS
}

# build NAME SOURCE EXTRA_DEPENDENCIES: resolve, compile SOURCE, write NAME/classpath.
build() {
  local name=$1 src=$2 extra=$3 dir="$cache/$1"
  local stamp
  stamp="$dir/.stamp-$(cat "$src" "$0" | sha256sum | cut -c1-16)"
  if [ -f "$stamp" ] && [ -f "$dir/classpath" ]; then
    return 0
  fi
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tablekeeper.catalogs</groupId><artifactId>$name</artifactId><version>1</version>
  <dependencies>
$(common_deps)
$extra
  </dependencies>
</project>
POM
  rm -f "$dir/deps.txt"
  mvn -q -B -f "$dir/pom.xml" dependency:build-classpath -Dmdep.outputFile="$dir/deps.txt" -Dmdep.includeScope=runtime >&2 \
    || { echo "java: Maven could not resolve the $name dependencies (Paimon $paimon)" >&2; exit 1; }
  rm -rf "$dir/classes"
  mkdir -p "$dir/classes"
  javac -nowarn -d "$dir/classes" -cp "$(cat "$dir/deps.txt")" "$src"
  printf '%s:%s\n' "$dir/classes" "$(cat "$dir/deps.txt")" >"$dir/classpath"
  rm -f "$dir"/.stamp-*
  touch "$stamp"
}

# The server's test jar only: its own dependencies are paimon-core's, which paimon-bundle carries.
build rest "$here/RestCatalogServerLauncher.java" "
    <dependency>
      <groupId>org.apache.paimon</groupId><artifactId>paimon-core</artifactId><version>$paimon</version><classifier>tests</classifier>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
    <dependency><groupId>com.squareup.okhttp3</groupId><artifactId>mockwebserver</artifactId><version>$mockwebserver</version></dependency>"
build driver "$repo/scripts/javapaimon/PaimonDriver.java" "
    <dependency><groupId>org.postgresql</groupId><artifactId>postgresql</artifactId><version>$postgresql_jdbc</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId><version>$sqlite_jdbc</version></dependency>"
echo "java $cache"
