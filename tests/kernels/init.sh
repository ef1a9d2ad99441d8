#!/bin/busybox sh
# /init of the test initramfs (busybox-static): loads the 9p and virtio
# modules this kernel has, mounts this machine's / read-only (tag "host")
# and the writable results folder (tag "results"), chroots into the root
# and runs the guest script named in results/guest.env. Then powers off:
# qemu runs with -no-reboot and the kernel with panic=-1, so any way out
# ends the guest.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "bpfs-init: $*" >/dev/console; }

# Two passes: a module whose dependency failed the first time loads after it.
for pass in 1 2; do
	while read -r m; do
		grep -q "^$m " /proc/modules 2>/dev/null && continue
		insmod "/modules/$m.ko" 2>/dev/null || [ $pass = 1 ] || say "insmod $m failed"
	done </modules/modules.order
done

N=/newroot
mkdir -p $N
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose host $N; then
	say "cannot mount the host's / over 9p (modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' '))"
	poweroff -f
fi
# inside the new root: the kernel's own file systems, and tmpfs where the
# read-only root must be written
mount -t proc proc $N/proc
mount -t sysfs sysfs $N/sys
mount -t devtmpfs devtmpfs $N/dev
# what udev would add: bash's <(...) needs /dev/fd
ln -sf /proc/self/fd $N/dev/fd
for i in 0 1 2; do ln -sf /proc/self/fd/$i $N/dev/$(echo stdin stdout stderr | cut -d' ' -f$((i + 1))); done
mkdir -p $N/dev/pts $N/dev/shm
mount -t devpts devpts $N/dev/pts
mount -t tmpfs tmpfs $N/dev/shm
mount -t debugfs debugfs $N/sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs $N/sys/kernel/tracing 2>/dev/null
mount -t bpf bpf $N/sys/fs/bpf
mount -t cgroup2 cgroup2 $N/sys/fs/cgroup
# The checkout may live where tmpfs goes (CI's clone under /tmp): the
# host's folders stay reachable under /hostfs, and the checkout is bound
# back over the tmpfs once guest.env has said where it is.
for d in /tmp /run /var/tmp; do
	mkdir -p /hostfs$d
	mount -o bind $N$d /hostfs$d
	mount -t tmpfs tmpfs $N$d
done
chmod 1777 $N/tmp $N/var/tmp
mkdir -p $N/run/results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results $N/run/results
for p in "$(. $N/run/results/guest.env && echo "$ROOT")" \
	"$(. $N/run/results/guest.env && echo "$OUTPUT")"; do
	for d in /tmp /run /var/tmp; do
		case "$p/" in
		"$d"/?*) mkdir -p "$N$p" && mount -o bind "/hostfs$p" "$N$p" ;;
		esac
	done
done
ifconfig lo 127.0.0.1 up # the agent pushes to a receiver on loopback
hostname bpfs-guest

if [ -r $N/run/results/guest.env ]; then
	say "running the guest script ($(uname -r))"
	# guest.env sets GUEST_SCRIPT and what it needs (ROOT, OUTPUT)
	chroot $N /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
		/bin/bash -c '. /run/results/guest.env && exec /bin/bash "$GUEST_SCRIPT"' \
		>$N/run/results/guest.out 2>$N/run/results/guest.err
	echo "exit $?" >$N/run/results/guest.done
else
	say "no guest.env in the results folder"
fi
sync
umount $N/run/results
poweroff -f
