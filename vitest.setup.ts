/**
 * fast-check 4 sizes a collection by the `size` setting ("small": about ten items) even when
 * the test gives a `maxLength` or `maxCommands`, so a property asking for runs of 200 commands
 * got ten. Every explicit maximum is honoured instead: the properties reach the long runs,
 * deep books and full rate windows they were written for.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), defaultSizeToMaxWhenMaxSpecified: true });
