// Peer of the seed job (SparkPi): Spark's example, 100,000 points a slice, each coordinate
// random * 2 - 1; prints "Pi is roughly ..." as Spark's does. Run whole by spark-submit from
// scripts/peer/jvm.py.
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public final class SparkPiPeer {
  public static void main(String[] args) {
    int slices = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int n = (int) Math.min(100000L * slices, Integer.MAX_VALUE);
    JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Spark Pi"));
    List<Integer> l = new ArrayList<>(n);
    for (int i = 0; i < n; i++) l.add(i);
    long t = System.nanoTime();
    int count = sc.parallelize(l, slices).map(i -> {
      double x = Math.random() * 2 - 1;
      double y = Math.random() * 2 - 1;
      return (x * x + y * y <= 1) ? 1 : 0;
    }).reduce(Integer::sum);
    System.out.printf("JOB_SECONDS %.3f%n", (System.nanoTime() - t) / 1e9);
    System.out.println("Pi is roughly " + 4.0 * count / n);
    sc.stop();
  }
}
