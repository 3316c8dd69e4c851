package lake.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;

import io.delta.storage.S3SingleDriverLogStore;

/**
 * Delta's S3 log store, safe for writers in several processes: a commit file is written with an
 * S3 conditional PUT (If-None-Match: *), so of two writers of version N exactly one succeeds and
 * the other sees the file as already there, which Delta answers by checking conflicts and trying
 * version N+1. Delta 4.4's own S3 store checks for the file and then writes it, and between two
 * processes both writes can land (one commit lost).
 */
public class ConditionalPutS3LogStore extends S3SingleDriverLogStore {

  /** Delta builds its log stores from the Hadoop configuration. */
  public ConditionalPutS3LogStore(Configuration conf) {
    super(conf);
  }

  /** Commit files (no overwrite) are put conditionally; S3's 412 means another writer won. */
  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    if (overwrite) {
      super.write(path, actions, true, conf);
      return;
    }
    FileSystem fs = path.getFileSystem(conf);
    FSDataOutputStreamBuilder builder = fs.createFile(path).overwrite(false);
    builder.must("fs.option.create.conditional.overwrite", true);
    try (FSDataOutputStream out = builder.build()) {
      while (actions.hasNext()) {
        out.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
      }
    } catch (RemoteFileChangedException | org.apache.hadoop.fs.FileAlreadyExistsException e) {
      throw new java.nio.file.FileAlreadyExistsException(path.toString());
    }
  }
}
