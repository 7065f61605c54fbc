package io.coord.testkit;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.parallel.ResourceLocksProvider;

/**
 * Runs the tests of one {@link ZooKeeperTest} class one at a time, whatever JUnit's execution mode, while classes may
 * still run beside each other: every test takes a lock named after its outermost class, whose ensemble it shares and
 * which each test resets as it ends.
 */
final class OneTestAtATime implements ResourceLocksProvider {
    @Override
    public Set<Lock> provideForMethod(List<Class<?>> enclosingInstanceTypes, Class<?> testClass, Method testMethod) {
        Class<?> outermost = enclosingInstanceTypes.isEmpty() ? testClass : enclosingInstanceTypes.get(0);
        return Set.of(new Lock("coord-testkit:" + outermost.getName()));
    }
}
