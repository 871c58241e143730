/** The toolstorm version written into reports and cassettes. */
export const VERSION = '0.1.0'
