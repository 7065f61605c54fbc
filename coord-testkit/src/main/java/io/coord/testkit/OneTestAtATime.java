package io.coord.testkit;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.parallel.ResourceLocksProvider;

/**
 * Runs the tests of one {@link ZooKeeperTest} class one at a time, whatever JUnit's execution mode, while classes may
 * still run beside each other: every test, and every nested class as a whole, takes a lock named after its outermost
 * class, whose ensemble it shares and which each test resets as it ends.
 */
final class OneTestAtATime implements ResourceLocksProvider {
    @Override
    public Set<Lock> provideForMethod(List<Class<?>> enclosingInstanceTypes, Class<?> testClass, Method testMethod) {
        return outermostClassLock(enclosingInstanceTypes, testClass);
    }

    /**
     * A nested class holds the lock for all it runs: its {@code @BeforeAll} and {@code @AfterAll} use the shared
     * ensemble too, and must not meet an outer test that resets it as it ends.
     */
    @Override
    public Set<Lock> provideForNestedClass(List<Class<?>> enclosingInstanceTypes, Class<?> testClass) {
        return outermostClassLock(enclosingInstanceTypes, testClass);
    }

    private static Set<Lock> outermostClassLock(List<Class<?>> enclosingInstanceTypes, Class<?> testClass) {
        Class<?> outermost = enclosingInstanceTypes.isEmpty() ? testClass : enclosingInstanceTypes.get(0);
        return Set.of(new Lock("coord-testkit:" + outermost.getName()));
    }
}
