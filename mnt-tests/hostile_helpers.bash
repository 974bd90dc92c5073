# hostile_helpers.bash — delivering one hostile input to a mounted store and
# seeing what it met (hostile.bats).
#
#   deliver HOW FILE        hands the bytes of FILE to the mount at $M (or to
#                           queuefs-sql on $STORE) as HOW says, and prints
#                           what came back: "OK", or "ERRNO NAME" (NAME is
#                           the error's name where a ctl error line or
#                           queuefs-sql's stderr carries one, else "-")
#   snapshot                every table, record and definition of the
#                           fixture store, as queuefs-sql prints them
#   rep N TEXT              TEXT (one line) N times, no newline added
#   bytes N BYTE            N copies of BYTE (e.g. 'a', or '\x00') via tr
#
# HOW is one of
#   ctl      one write() of the bytes on a fresh ctl session, then a read
#   sql      the bytes on queuefs-sql's standard input
#   record   open(O_CREAT|O_TRUNC) notes/fresh, write the bytes, close
#   update   the same on the existing queue record file jobs/8
#   new      open jobs/new for appending, write the bytes (one write()
#            when the kernel takes them whole), close
#   rename   rename jobs/7 to jobs/released/BYTES
#   create   open(O_CREAT|O_EXCL) notes/BYTES, write '{}', close
#   lookup   stat jobs/BYTES
#   mkdir    mkdir BYTES at the top of the mount
# For the system calls the errno is that of the first call that failed.

rep() {
    [ "$1" -gt 0 ] || return 0
    yes -- "$2" | head -n "$1" | tr -d '\n'
}

bytes() {
    head -c "$1" /dev/zero | tr '\0' "$2"
}

snapshot() {
    "$QUEUEFS_SQL" "$STORE" "SELECT * FROM jobs ORDER BY id; SELECT * FROM notes ORDER BY id;
        SELECT * FROM empty; INFO FOR TABLE jobs; INFO FOR TABLE notes; INFO FOR TABLE empty" 2>&1
    ls -a "$M" "$M/jobs" "$M/notes" 2>&1
}

deliver() {
    python3 -c '
import errno, json, os, subprocess, sys
how, path, mnt, store, sql = sys.argv[1:6]
data = open(path, "rb").read()
ERRNO = {"ParseError": "EINVAL", "RecordExists": "EEXIST", "NoSuchTable": "ENOENT",
         "NoSuchRecord": "ENOENT", "QueueFieldIsTheEngines": "EPERM",
         "HeldByAnotherConsumer": "EBUSY", "ClaimAboveCeiling": "ERANGE",
         "NoDelayField": "EOPNOTSUPP", "WrongKind": "EINVAL", "SchemaViolation": "EINVAL",
         "StoreFull": "ENOSPC", "TableExists": "EEXIST", "TypeError": "EINVAL",
         "TooLarge": "EFBIG", "StoreError": "EIO", "TableNotEmpty": "ENOTEMPTY"}

def name_of(e):
    return "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode.get(e, str(e))

def error_name(text):
    lines = text.decode("utf-8", "replace").splitlines()
    try:
        return json.loads(lines[-1]).get("error") or "?"
    except (IndexError, ValueError, AttributeError):
        return "?"

def write_all(fd, b):
    while b:
        b = b[os.write(fd, b):]

def by_file(fpath, flags, b):
    """open, write, close: the first of them to fail raises its error."""
    fd = os.open(fpath, flags, 0o644)
    try:
        write_all(fd, b)
    except OSError:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    os.close(fd)

b = lambda *parts: os.path.join(mnt.encode(), *parts)
try:
    if how == "ctl":
        fd = os.open(mnt + "/ctl", os.O_RDWR)
        try:
            n = os.write(fd, data)
            print("OK" if n == len(data) else "SHORT %d of %d" % (n, len(data)))
        except OSError as e:
            out = b""
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                out += chunk
            print(name_of(e.errno), error_name(out))
        os.close(fd)
    elif how == "sql":
        p = subprocess.run([sql, store], input=data, capture_output=True)
        if p.returncode == 0:
            print("OK")
        else:
            name = error_name(p.stderr)
            print(ERRNO.get(name, "EXIT%d" % p.returncode), name)
    elif how == "record":
        by_file(b(b"notes", b"fresh"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, data)
        print("OK")
    elif how == "update":
        by_file(b(b"jobs", b"8"), os.O_WRONLY | os.O_TRUNC, data)
        print("OK")
    elif how == "new":
        by_file(b(b"jobs", b"new"), os.O_WRONLY | os.O_APPEND, data)
        print("OK")
    elif how == "rename":
        os.rename(b(b"jobs", b"7"), b(b"jobs", b"released", data))
        print("OK")
    elif how == "create":
        by_file(b(b"notes", data), os.O_WRONLY | os.O_CREAT | os.O_EXCL, b"{}")
        print("OK")
    elif how == "lookup":
        os.stat(b(b"jobs", data))
        print("OK")
    elif how == "mkdir":
        os.mkdir(b(data))
        print("OK")
    else:
        print("no such delivery", how)
except OSError as e:
    print(name_of(e.errno), "-")
' "$1" "$2" "$M" "$STORE" "$QUEUEFS_SQL"
}
