package lake.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's checksummed local filesystem without the processes it starts: with no native Hadoop
 * library loaded, Hadoop runs `chmod` for every file and directory it creates and `readlink` for
 * every link status (each commit's rename asks twice), about 4 ms each. Java does both itself.
 */
public class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {

  /** Hadoop builds filesystems by their class name. */
  public LocalFileSystem() {
    super(new Raw());
  }

  /** The raw filesystem with Java's calls where Hadoop's would start a process. */
  public static class Raw extends RawLocalFileSystem {

    /** `chmod` without a process; a missing file is an error, as it is for `chmod`. */
    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      String symbols =
          permission.getUserAction().SYMBOL
              + permission.getGroupAction().SYMBOL
              + permission.getOtherAction().SYMBOL;
      Files.setPosixFilePermissions(
          pathToFile(path).toPath(), PosixFilePermissions.fromString(symbols));
    }

    /** A path that is no link has its own status; a link keeps Hadoop's answer. */
    @Override
    public FileStatus getFileLinkStatus(Path path) throws IOException {
      if (Files.isSymbolicLink(pathToFile(path).toPath())) {
        return super.getFileLinkStatus(path);
      }
      return getFileStatus(path);
    }
  }
}
