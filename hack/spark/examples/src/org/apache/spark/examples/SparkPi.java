package org.apache.spark.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Estimates pi by throwing darts at the unit square, spread over the number
 * of slices given as the first argument (default 2).
 *
 * <p>It stands in for the class of the same name in Spark's examples jar,
 * which is not published on Maven Central and not in the pyspark package:
 * hack/spark/install.sh builds it against each pinned distribution under
 * the path of the official image, so pod specs written for that image run
 * unchanged. It uses only Spark's Java API, which is the same for Scala
 * 2.12 and 2.13.
 */
public final class SparkPi {
  private static final int DARTS_PER_SLICE = 100_000;

  private SparkPi() {}

  public static void main(String[] args) {
    int slices = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    List<Integer> sliceIds = new ArrayList<>(slices);
    for (int i = 0; i < slices; i++) {
      sliceIds.add(i);
    }

    JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Spark Pi"));
    try {
      // One task a slice; each throws its darts itself, so the driver never
      // holds more than the slice ids.
      long inside =
          sc.parallelize(sliceIds, slices)
              .map(
                  id -> {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    long in = 0;
                    for (int i = 0; i < DARTS_PER_SLICE; i++) {
                      double x = r.nextDouble(-1, 1);
                      double y = r.nextDouble(-1, 1);
                      if (x * x + y * y <= 1) {
                        in++;
                      }
                    }
                    return in;
                  })
              .reduce(Long::sum);
      System.out.println("Pi is roughly " + 4.0 * inside / ((long) DARTS_PER_SLICE * slices));
    } finally {
      sc.stop();
    }
  }
}
