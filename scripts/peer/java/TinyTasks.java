// Peer of `cargo bench --bench jobs -- throughput`: N one-record tasks,
// parallelize(0 until n, n).count(), after a warm-up job; prints PEER_SECONDS, the median of
// three timed jobs. Run by scripts/peer/jvm.py with the master it is given.
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public final class TinyTasks {
  public static void main(String[] args) {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 100000;
    JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("TinyTasksPeer"));
    sc.setLogLevel("WARN");
    List<Integer> data = new ArrayList<>(n);
    for (int i = 0; i < n; i++) data.add(i);
    sc.parallelize(data, n).count();
    List<Double> times = new ArrayList<>();
    for (int run = 0; run < 3; run++) {
      long t = System.nanoTime();
      long count = sc.parallelize(data, n).count();
      times.add((System.nanoTime() - t) / 1e9);
      if (count != n) throw new IllegalStateException("count " + count);
    }
    Collections.sort(times);
    System.out.printf("PEER_SECONDS %.3f%n", times.get(1));
    sc.stop();
  }
}
