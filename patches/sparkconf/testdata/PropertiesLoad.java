// Loads each file named on the command line with java.util.Properties.load
// over UTF-8, as Spark loads spark-defaults.conf, and prints one line per
// file: its name, then the sorted key=value pairs each followed by ";",
// with every character outside printable ASCII and the backslash written
// as a backslash, u and four hex digits; or the name and ERR when load throws.
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

public class PropertiesLoad {
  static String esc(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) {
      if (c < 0x20 || c > 0x7e || c == '\\') b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.toString();
  }

  public static void main(String[] files) throws Exception {
    for (String f : files) {
      Properties p = new Properties();
      try (Reader r = new InputStreamReader(new FileInputStream(f), StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IllegalArgumentException e) {
        System.out.println(f + " ERR");
        continue;
      }
      TreeMap<String, String> m = new TreeMap<>();
      for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
      StringBuilder b = new StringBuilder();
      for (Map.Entry<String, String> e : m.entrySet()) b.append(esc(e.getKey())).append("=").append(esc(e.getValue())).append(";");
      System.out.println(f + " " + b);
    }
  }
}
