#!/bin/sh
# mmdebstrap's --customize-hook for the Spark images' rootfs ($1): what
# apache/spark-docker's Dockerfile.template and its base,
# eclipse-temurin:17-jammy, do beyond installing packages.
set -eu
root=$1

# The user the images run as (Dockerfile.template: groupadd/useradd spark,
# uid and gid 185, home /nonexistent).
chroot "$root" groupadd --system --gid 185 spark
chroot "$root" useradd --system --uid 185 --gid spark -d /nonexistent spark
# Dockerfile.template: only the wheel group may su.
echo "auth required pam_wheel.so use_uid" >>"$root/etc/pam.d/su"

# eclipse-temurin: LANG=en_US.UTF-8 with that locale generated.
sed -i 's/^# *\(en_US.UTF-8 UTF-8\)/\1/' "$root/etc/locale.gen"
chroot "$root" locale-gen >/dev/null

# eclipse-temurin's JAVA_HOME is /opt/java/openjdk; Debian's JRE is under
# /usr/lib/jvm.
jre=$(cd "$root/usr/lib/jvm" && ls -d java-17-openjdk-*)
mkdir -p "$root/opt/java"
ln -s "/usr/lib/jvm/$jre" "$root/opt/java/openjdk"

# The host's, copied by mmdebstrap; the container runtime provides both.
rm -f "$root/etc/resolv.conf" "$root/etc/hostname"
