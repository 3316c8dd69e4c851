package lake.storage;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.local.LocalConfigKeys;

/**
 * The local filesystem as FileContext sees it (Delta's log store commits through FileContext),
 * on {@link LocalFileSystem.Raw}: Hadoop's own builds its raw filesystem by name.
 */
public class LocalFs extends ChecksumFs {

  /** Hadoop builds FileContext's filesystems from a URI and a configuration. */
  public LocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new Raw(uri, conf));
  }

  /** Hadoop's RawLocalFs, whose constructors are not public, over our raw filesystem. */
  static class Raw extends DelegateToFileSystem {

    Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new LocalFileSystem.Raw(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1;
    }

    @Override
    public FsServerDefaults getServerDefaults(Path path) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    @Deprecated
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    /** Local filesystems differ in what they allow; the operating system says (as Hadoop's). */
    @Override
    public boolean isValidName(String src) {
      return true;
    }
  }
}
